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
	"github.com/usbflash/usbflash/usbms/usbdev"
)

func newListCommand(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List USB card readers, their LUNs and media",
		Long: `List every USB mass-storage interface: identity, speed, and for each LUN
the medium's vendor, product, capacity and write protection.

Readers the kernel's usb-storage driver holds are described from sysfs and
left alone; others are asked over SCSI. list never detaches a driver.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			return a.list(c.Context(), asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: {\"devices\": [...]}")
	return c
}

func (a *app) list(ctx context.Context, asJSON bool) error {
	usb, err := a.newReaders()
	if err != nil {
		return err
	}
	found, err := usb.ListReaders(ctx)
	if errors.Is(err, usbdev.ErrNoUSBAccess) || errors.Is(err, usbdev.ErrNoUSBSupport) {
		// Not a failure: there is simply nothing to list here.
		if asJSON {
			return json.NewEncoder(a.stdout).Encode(map[string]any{"devices": []any{}, "note": factsAndAdvice(err)})
		}
		fmt.Fprintf(a.stdout, "No USB readers: %s\n", factsAndAdvice(err)) // the advice says what still works
		return nil
	}
	if err != nil {
		return failure.Wrap(failure.Device, fmt.Errorf("listing USB devices: %w", err))
	}
	readers := make([]readerinfo.Reader, 0, len(found))
	for _, r := range found {
		readers = append(readers, readerinfo.DescribeReader(r, readerWords()))
	}
	note := accessNote(found)
	if asJSON {
		out := map[string]any{"devices": readers}
		if note != "" {
			out["note"] = note
		}
		return json.NewEncoder(a.stdout).Encode(out)
	}
	if len(readers) == 0 {
		fmt.Fprintln(a.stdout, "No USB mass-storage readers attached.")
		return nil
	}
	readerinfo.PrintReaders(a.stdout, readers)
	if note != "" {
		fmt.Fprintln(a.stderr, note)
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
	return fmt.Sprintf("No permission to open %s: %s.", plural(len(denied), "reader"), hint(denied[0]))
}

// readerWords are cmd's words in list's and info's reports: an error with
// its advice, and --quirks for the flags given on the command line.
func readerWords() readerinfo.Words {
	return readerinfo.Words{Error: factsAndAdvice, Setting: "--quirks"}
}
