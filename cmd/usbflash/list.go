package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
			return runOr(c.Context(), runF, o, a.listRun)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: {\"devices\": [...], \"disks\": [...]}")
	return c
}

// listRun lists the readers and the disks disk: writes.
func (a *app) listRun(ctx context.Context, o *listOptions) error {
	l, found, err := a.survey(ctx, o.Readers)
	if err != nil {
		return err
	}
	// What list cannot show and why, beside what it shows.
	if n := accessNote(found); n != "" {
		l.Notes = append([]string{n}, l.Notes...)
	}
	return l.Print(a.stdout, a.stderr, o.JSON)
}

// survey is what list shows: the USB readers (none, and why, where there
// is no USB to list here), found being them as drive lists them, and the
// disks disk: writes (a note when they cannot be listed); the error of
// readers that cannot be listed, beside the disks.
func (a *app) survey(ctx context.Context, readers *drive.Readers) (readerinfo.List, []drive.Reader, error) {
	var l readerinfo.List
	found, err := readers.ListReaders(ctx)
	if errors.Is(err, usbdev.ErrNoUSBAccess) || errors.Is(err, usbdev.ErrNoUSBSupport) {
		// Not a failure: there are simply no readers to list here.
		l.NoUSB, found, err = factsAndAdvice(err), nil, nil // the advice says what still works
	}
	if err != nil {
		err = failure.Wrap(failure.Device, fmt.Errorf("listing USB devices: %w", err))
	}
	for _, r := range found {
		l.Readers = append(l.Readers, readerinfo.DescribeReader(r, readerWords()))
	}
	listDisks := drive.ListDisks
	if a.listDisks != nil {
		listDisks = a.listDisks
	}
	disks, diskErr := listDisks(ctx)
	for _, d := range disks {
		l.Disks = append(l.Disks, readerinfo.DescribeDisk(d))
	}
	if diskErr != nil {
		l.Notes = append(l.Notes, factsAndAdvice(failure.Wrap(failure.Device, fmt.Errorf("listing disks: %w", diskErr))))
	}
	return l, found, err
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

// infoOptions is what an info command line asks for: the target, and the
// readers it is opened among.
type infoOptions struct {
	Target  drive.Spec
	Readers *drive.Readers
	JSON    bool
}

func newInfoCommand(a *app, runF func(*infoOptions) error) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "info TARGET",
		Short: "Show everything known about one target",
		Long: `Show one target's identity (INQUIRY, serial), capacity, block size, write
protection and transfer limits. Nothing is written. For a usb: target the
reader is claimed, which detaches the kernel driver (refused while mounted,
unless --force).`,
		Args:              exactArgs(1, "a TARGET"),
		ValidArgsFunction: targetArgs(false),
		RunE: func(c *cobra.Command, args []string) error {
			t, readers, err := a.target(args[0])
			if err != nil {
				return err
			}
			o := &infoOptions{Target: t, Readers: readers, JSON: asJSON}
			return runOr(c.Context(), runF, o, a.infoRun)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}

// infoRun opens the target read-only and describes it.
func (a *app) infoRun(ctx context.Context, o *infoOptions) error {
	d, err := drive.Open(ctx, o.Target, drive.Options{ReadOnly: true, AllowNoMedium: true, Readers: o.Readers})
	if err != nil {
		return err
	}
	defer d.Close()
	rep := readerinfo.DescribeTarget(d, readerWords())
	if o.JSON {
		return json.NewEncoder(a.stdout).Encode(rep)
	}
	readerinfo.PrintTarget(a.stdout, rep)
	return nil
}
