package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/pipeline"
)

// addBlocksFlags are erase's and format's flags: write's for the cards
// (addCardsFlags), and the transfers of blocks that are made, not decoded.
func addBlocksFlags(c *cobra.Command, f *writeFlags) {
	addCardsFlags(c, f)
	fl := c.Flags()
	fl.BoolVar(&f.force, "force", false, "take a card even though the system uses its disk (mounted)")
	fl.BoolVar(&f.noVerify, "no-verify", false, "skip reading the card back after writing")
	addTransferFlag(c, &f.transferSize, pipeline.DefaultTransferSize, "bytes per WRITE command")
	fl.IntVar(&f.buffers, "buffers", 0, "buffers cycling between the blocks made and the writer, at least 2 (0: 4, fewer for transfers over 2 MiB)")
}

// blocksArgs is at least one TARGET, or none with --all or --watch.
func blocksArgs(f *writeFlags, name string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		switch {
		case (f.all || f.watch) && len(args) != 0:
			return &usageError{fmt.Sprintf("%s --all and --watch find the readers themselves: give no TARGET", name)}
		case f.all && f.watch:
			return &usageError{"--all and --watch are two ways to choose the readers: give one"}
		case !f.all && !f.watch && len(args) == 0:
			return &usageError{fmt.Sprintf("%s needs at least one TARGET; see 'usbflash %s --help'", name, name)}
		case f.stopTimeout != 0 && !f.watch:
			return &usageError{"--stop-timeout is how long a stop lets --watch's cards finish: add --watch"}
		}
		return nil
	}
}

// blocksOptions are erase's or format's Options: blocks written to every
// target as write writes an image, by write's run (writeRun), its
// question saying what is written (asks).
func (a *app) blocksOptions(c *cobra.Command, args []string, f *writeFlags, command jsonevents.Command, blocks session.Blocks, asks string) (*writeOptions, error) {
	transfer, err := transferFlag(c, f.transferSize)
	if err != nil {
		return nil, err
	}
	o := &writeOptions{Command: command, Asks: asks, Config: session.Config{
		Blocks:  blocks,
		Targets: session.Targets{Eject: f.eject, Force: f.force, SkipRefused: f.skipRefused},
		Engine:  session.Engine{TransferSize: transfer, Buffers: f.buffers, Verify: !f.noVerify},
		Output:  session.Output{ExitCodes: classCodes()},
	}}
	return a.cardsOptions(o, f, args)
}

func newEraseCommand(a *app, runF func(*writeOptions) error) *cobra.Command {
	var f writeFlags
	var random, noUnmap bool
	c := &cobra.Command{
		Use:   "erase TARGET...",
		Short: "Write every block of a card with zeros (or a random pattern) and read it back",
		Long: `Erase TARGET: every block the card has is written with zeros (or, with
--random, a pattern no controller compresses), at the speed of a write, then
read back and compared. A card whose reader offers it is unmapped first
(SCSI UNMAP, or WRITE SAME with UNMAP), so that its controller may erase
what it holds; a reader that does not is said.

What "erased" means on flash: every block a host can address holds the
pattern, checked. The card's controller keeps spare blocks, and blocks it
wore out, outside that address space; what they held is out of reach of
any host, usbflash included. A card that held secrets is destroyed, not
erased.

Every promise of write holds: the card is named or chosen (--all,
--watch), a disk the system uses is refused, one question or --yes, the
first transfer is written last, Ctrl-C stops after the command in flight.
The card is left with no partition table: 'usbflash format' gives it one.`,
		Args:              blocksArgs(&f, "erase"),
		ValidArgsFunction: targetArgs(false),
		RunE: func(c *cobra.Command, args []string) error {
			e, err := session.NewErase(random, noUnmap)
			if err != nil {
				return err
			}
			o, err := a.blocksOptions(c, args, &f, jsonevents.CommandErase, e, e.What()+" over every block")
			if err != nil {
				return err
			}
			return runOr(c.Context(), runF, o, a.writeRun)
		},
	}
	addBlocksFlags(c, &f)
	c.Flags().BoolVar(&random, "random", false, "write a random pattern instead of zeros (a controller that stores no zero blocks still writes it)")
	c.Flags().BoolVar(&noUnmap, "no-unmap", false, "do not unmap the card's blocks before writing them")
	return c
}

func newFormatCommand(a *app, runF func(*writeOptions) error) *cobra.Command {
	var f writeFlags
	var label, eraseUnit, fs string
	c := &cobra.Command{
		Use:   "format TARGET...",
		Short: "Give a card back to normal use: one partition, FAT32 or exFAT, as the SD Association's formatter lays it out",
		Long: `Format TARGET as the SD Association's SD Formatter does for its capacity:
an MBR with one partition and FAT32 on cards up to 32 GiB, exFAT on larger
ones, with the SD File System Specification's cluster sizes (32 KiB for
FAT32, fewer on cards under 4 GiB; 128 KiB for exFAT), and the partition,
the end of the FATs and the first cluster on the card's erase unit, so that
no cluster straddles two of them.

The erase unit is --erase-unit when given (bench's alignment test measures
it; --erase-unit measure runs that test, which only reads, on each card
first), else the optimal transfer the reader reports when it is a power of
two of at least 64 KiB, else the specification's boundary unit for the
capacity: 4 MiB up to 32 GiB, 16 MiB up to 128 GiB, 32 MiB up to 512 GiB,
64 MiB above. The note before the write says which.

Only the file system's own blocks are written (tens of MiB), then read
back; the rest of the card keeps its old bytes in clusters marked free, as
a quick format leaves them ('usbflash erase' first overwrites them). Every
promise of write holds: the card is named or chosen (--all, --watch), a
disk the system uses is refused, one question or --yes, the first transfer
(the partition table) is written last.`,
		Args:              blocksArgs(&f, "format"),
		ValidArgsFunction: targetArgs(false),
		RunE: func(c *cobra.Command, args []string) error {
			var unit int64
			if eraseUnit != "" && eraseUnit != "measure" {
				var err error
				if unit, err = units.ParseSize(eraseUnit); err != nil {
					return &usageError{fmt.Sprintf("--erase-unit: %v", err)}
				}
			}
			fm, err := session.NewFormat(label, fs, unit)
			if err != nil {
				return err
			}
			fm.Measure = eraseUnit == "measure"
			what := "a new file system"
			if label != "" {
				what += fmt.Sprintf(" labelled %q", label)
			}
			o, err := a.blocksOptions(c, args, &f, jsonevents.CommandFormat, fm, what)
			if err != nil {
				return err
			}
			return runOr(c.Context(), runF, o, a.writeRun)
		},
	}
	addBlocksFlags(c, &f)
	c.Flags().StringVar(&label, "label", "", "the volume label: up to 11 characters (FAT32: ASCII letters, digits, spaces and !#$%&'()-@^_`{}~, upper-cased)")
	c.Flags().StringVar(&fs, "fs", "auto", "the file system: auto (FAT32 up to 32 GiB, exFAT above, as the SD Association's formatter), fat32 (for a device that reads no exFAT) or exfat (for files over FAT32's 4 GiB on a smaller card)")
	c.Flags().StringVar(&eraseUnit, "erase-unit", "", "the card's erase unit, the boundary the partition and the first cluster start on: a power of two (e.g. 4MiB, as bench's alignment test finds it), or measure: run that test (reads only) on each card first")
	return c
}
