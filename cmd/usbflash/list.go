package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/ui/readerinfo"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// listOptions is what a list command line asks for: the readers.
type listOptions struct {
	Readers *drive.Readers
	JSON    bool
}

func newListCommand(a *app, runF func(*listOptions) error) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List USB card readers, their LUNs and media, and the disks disk: writes",
		Long: `List every USB mass-storage interface: identity, speed, and for each LUN
the medium's vendor, product, capacity and write protection.

Readers the kernel's usb-storage driver holds are described from sysfs and
left alone; others are asked over SCSI. list never detaches a driver.

Then the whole disks a disk: target may name: external or removable ones
(a card reader's, a stick), with their bus, name, size and mounted volumes;
never the disk the system runs from.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			readers, err := a.newReaders()
			if err != nil {
				return err
			}
			o := &listOptions{Readers: readers, JSON: asJSON}
			if runF != nil {
				return runF(o)
			}
			return a.listRun(c.Context(), o)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: {\"devices\": [...], \"disks\": [...]}")
	return c
}

// listRun lists the readers and the disks disk: writes.
func (a *app) listRun(ctx context.Context, o *listOptions) error {
	found, err := o.Readers.ListReaders(ctx)
	var usbNote string
	if errors.Is(err, usbdev.ErrNoUSBAccess) || errors.Is(err, usbdev.ErrNoUSBSupport) {
		// Not a failure: there are simply no readers to list here.
		usbNote, found, err = factsAndAdvice(err), nil, nil // the advice says what still works
	}
	if err != nil {
		return failure.Wrap(failure.Device, fmt.Errorf("listing USB devices: %w", err))
	}
	readers := make([]readerinfo.Reader, 0, len(found))
	for _, r := range found {
		readers = append(readers, readerinfo.DescribeReader(r, readerWords()))
	}
	listDisks := drive.ListDisks
	if a.listDisks != nil {
		listDisks = a.listDisks
	}
	found2, diskErr := listDisks(ctx)
	disks := make([]readerinfo.Disk, 0, len(found2))
	for _, d := range found2 {
		disks = append(disks, readerinfo.DescribeDisk(d))
	}
	// What list cannot show and why, beside what it shows.
	var notes []string
	if n := accessNote(found); n != "" {
		notes = append(notes, n)
	}
	if diskErr != nil {
		notes = append(notes, factsAndAdvice(failure.Wrap(failure.Device, fmt.Errorf("listing disks: %w", diskErr))))
	}
	if o.JSON {
		out := map[string]any{"devices": readers, "disks": disks}
		if usbNote != "" {
			notes = append([]string{usbNote}, notes...)
		}
		if len(notes) > 0 {
			out["note"] = strings.Join(notes, " ")
		}
		return json.NewEncoder(a.stdout).Encode(out)
	}
	switch {
	case usbNote != "":
		fmt.Fprintf(a.stdout, "No USB readers: %s\n", usbNote)
	case len(readers) == 0:
		fmt.Fprintln(a.stdout, "No USB mass-storage readers attached.")
	default:
		readerinfo.PrintReaders(a.stdout, readers)
	}
	if len(disks) > 0 {
		fmt.Fprintln(a.stdout, "\nDisks (disk: targets, written through the system's uncached path):")
		readerinfo.PrintDisks(a.stdout, disks)
	}
	for _, n := range notes {
		fmt.Fprintln(a.stderr, n)
	}
	return nil
}

// accessNote says once, however many readers this user may not open,
// what would give access; "" when it may open them all.
func accessNote(found []drive.Reader) string {
	var denied []error
	for _, r := range found {
		if r.Access != nil {
			denied = append(denied, r.Access)
		}
	}
	if len(denied) == 0 {
		return ""
	}
	return fmt.Sprintf("No permission to open %s: %s.", termui.Plural(len(denied), "reader"), hint(denied[0]))
}

// readerWords are cmd's words in list's and info's reports: an error with
// its advice, and --quirks for the flags given on the command line.
func readerWords() readerinfo.Words {
	return readerinfo.Words{Error: factsAndAdvice, Setting: "--quirks"}
}
