package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/imagedst"
	"github.com/usbflash/usbflash/internal/parttable"
	"github.com/usbflash/usbflash/internal/units"
	"github.com/usbflash/usbflash/pipeline"
)

// readFlags are the options of `usbflash read`.
type readFlags struct {
	size                string
	used, force, verify bool
	transferSize        string
	buffers             int // as given: 0 lets the engine choose for the transfer size the reader allows
	asJSON, quiet       bool
}

func newReadCommand(a *app) *cobra.Command {
	var f readFlags
	c := &cobra.Command{
		Use:   "read TARGET OUT",
		Short: "Back a card up to an image file, compressed by its name",
		Long: `Read TARGET through the card reader and write it to OUT, compressed as its
name says: .zst (zstd), .gz (gzip), .xz (xz, in independent blocks), on every
core, or raw for any other name. Beside it goes OUT.bmap, a bmaptool block
map of the blocks that are not all zero (SHA-256 per range), so writing the
backup back can skip the rest.

OUT is written as OUT.part and renamed only when complete (with --verify,
only once the second read matched): an interrupted or failed read leaves
no file that looks finished. When the second read differs or fails, the
first stays as OUT.part, named in the message. An existing OUT is not
overwritten without --force. --used stops after the last partition of the
MBR or GPT; --size reads that many bytes; otherwise the whole card is read.

The buffers take a few transfer sizes of memory, at most ` + units.FormatSize(pipeline.MaxBufferMemory) + `.`,
		Args:              exactArgs(2, "TARGET and OUT"),
		ValidArgsFunction: readArgs,
		RunE: func(c *cobra.Command, args []string) error {
			rep := a.reporterFor(f.asJSON, f.quiet)
			return a.reported(rep, func() error {
				t, err := drive.Parse(args[0])
				if err != nil {
					return err
				}
				return a.backup(c.Context(), rep, t, args[1], f)
			})
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.size, "size", "", "read only this many bytes from the start of the card (e.g. 4GiB)")
	fl.BoolVar(&f.used, "used", false, "stop after the last partition of the card's MBR or GPT")
	fl.BoolVar(&f.force, "force", false, "overwrite OUT, and read a card whose disk is mounted")
	fl.BoolVar(&f.verify, "verify", false, "read the card a second time and compare")
	addTransferFlag(c, &f.transferSize, pipeline.DefaultReadSize, "bytes per READ command")
	fl.IntVar(&f.buffers, "buffers", 0, "buffers cycling between the card and the compressor, at least 2 (0: 4, fewer for transfers over 2 MiB)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per line on stdout (start, device, note, phase, progress, summary, error)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only errors; with --json, only the summary or error event")
	return c
}

// readArgs completes the target, then the output file's name.
func readArgs(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return completeTarget(c, toComplete)
	case 1:
		return nil, cobra.ShellCompDirectiveDefault
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// sizes checks the numeric flags: the transfer size, the buffers (their
// count for the transfer size asked, as the start event says it) and
// where to stop (-1: decided on the card).
func (f *readFlags) sizes() (transfer, want int64, buffers int, err error) {
	buffers = f.buffers
	transfer, err = parseTransfer(f.transferSize, &buffers)
	want = -1
	switch {
	case err != nil:
		return 0, 0, 0, err
	case f.size != "" && f.used:
		return 0, 0, 0, &usageError{"--size and --used both say where to stop: pass one"}
	case f.size != "":
		if want, err = units.ParseSize(f.size); err != nil || want <= 0 {
			return 0, 0, 0, &usageError{fmt.Sprintf("--size %q: want a positive size such as 4GiB", f.size)}
		}
	}
	return transfer, want, buffers, nil
}

func (a *app) backup(ctx context.Context, rep reporter, t drive.Spec, out string, f readFlags) error {
	transfer, want, buffers, err := f.sizes()
	if err != nil {
		return err
	}
	if out == "-" || strings.HasSuffix(out, "/") {
		return &usageError{fmt.Sprintf("OUT %q: want a file name (its extension picks the compression)", out)}
	}
	if err := imagedst.CheckBackup(out, f.force); err != nil {
		return err
	}

	// Said before the first command to the target: a reader that does not
	// answer must not leave the user looking at nothing.
	format := imagedst.FormatOf(out)
	rep.event(&readStartEvent{
		eventHeader: eventHeader{Event: evStart}, Command: cmdRead,
		Target: t.Raw, Out: out, Format: format, TransferSize: transfer, Buffers: buffers,
	}, fmt.Sprintf("Backing %s up to %s (%s) ...", t.Raw, out, format))
	readers, err := a.newReaders()
	if err != nil {
		return err
	}
	d, err := drive.Open(ctx, t, drive.Options{ReadOnly: true, Force: f.force, OnNotice: noticeNotes(rep), Readers: readers})
	if err != nil {
		return err
	}
	defer d.Close()
	transfer = openedDevice(rep, d, transfer)
	if d.InUse != nil {
		rep.event(newNote(inUseNote(d)), inUseNote(d))
	}
	extent, err := imagedst.ExtentOf(ctx, d.Dev, d.Name, want, f.used)
	var past *imagedst.SizeError
	if errors.As(err, &past) {
		return fmt.Errorf("--size %w", err)
	} else if err != nil {
		return err
	}
	if msg := extentNote(d.Name, extent); msg != "" {
		rep.event(newNote(msg), msg)
	}

	b, err := imagedst.StartBackup(out, f.force)
	if err != nil {
		return err
	}
	defer b.Abort()
	// A second Ctrl-C: the card was only read, so removing the unfinished
	// file undoes everything.
	defer a.aborts.add(func() {
		what := fmt.Sprintf("%s was complete", out)
		if b.Discard() {
			what = fmt.Sprintf("%s was removed; %s was only read", b.PartPath(), d.Name)
		}
		rep.fail(fmt.Errorf("%w by a second interrupt: %s", context.Canceled, what), exitCancelled)
	})()
	res, err := b.Run(ctx, d.Dev, imagedst.BackupOptions{
		// f.buffers as given: with none, the engine chooses for the
		// transfer size the reader allows (a capped reader, more).
		Name: d.Name, Size: extent.Size, Verify: f.verify, TransferSize: int(transfer), Buffers: f.buffers,
		Progress: progressFunc(rep, nil),
	})
	if err != nil {
		return err
	}
	read := res.Read
	sum := &readSummaryEvent{
		eventHeader: eventHeader{Event: evSummary}, Command: cmdRead,
		Bytes: read.Bytes, Reads: read.Reads, ElapsedS: read.Elapsed.Seconds(), Rate: rate(read.Bytes, read.Elapsed),
		SHA256: hex.EncodeToString(read.SHA256[:]), Out: out, Format: res.Format, OutBytes: res.Written,
		BMap: res.BMap, MappedBytes: res.MappedBytes, Bound: readBound(read), BoundRatio: read.BoundRatio,
		PartitionTable: extent.Table,
	}
	text := []string{
		fmt.Sprintf("Read %s in %s (%s), %s", units.FormatBytes(read.Bytes), read.Elapsed.Round(time.Millisecond),
			units.FormatRate(sum.Rate), plural(read.Reads, "command")),
		fmt.Sprintf("Wrote %s (%s, %s) and its block map %s (%s of the image is not zero)", out, res.Format, units.FormatSize(res.Written), res.BMap, units.FormatSize(res.MappedBytes)),
		readBoundLine(read),
	}
	if v := res.Verify; v != nil {
		sum.Verified = true
		sum.VerifyElapsedS = ptr(v.Elapsed.Seconds())
		text = append(text, fmt.Sprintf("Verified: a second read of %s matches (%s)", units.FormatSize(v.Bytes), v.Elapsed.Round(time.Millisecond)))
	}
	text = append(text, "SHA-256 "+sum.SHA256)
	rep.event(sum, strings.Join(text, "\n"))
	return nil
}

// inUseNote says that a disk read through the kernel is in use, which
// write refuses and read only warns of: its file systems can change while
// they are read.
func inUseNote(d *drive.Device) string {
	var uses []drive.Use
	if te := (*drive.Error)(nil); errors.As(d.InUse, &te) {
		uses = te.Uses
	}
	return fmt.Sprintf("%v: what is read may change meanwhile, and the backup be inconsistent; %s first for a consistent one", d.InUse, inUseAdvice(uses))
}

// extentNote says how --used decided how much to read ("" without it).
func extentNote(name string, e imagedst.Extent) string {
	switch e.Table {
	case "":
		return ""
	case "none":
		if e.Damaged != nil {
			return fmt.Sprintf("%s: %v: reading the whole card, as for a card without one", name, e.Damaged)
		}
		return fmt.Sprintf("%s has no partition table: reading the whole card", name)
	case parttable.GPT:
		return fmt.Sprintf("GPT: reading up to the end of the last partition, %s; the backup GPT at the end of the card is not included (sgdisk -e rebuilds it after a restore)", units.FormatSize(e.Size))
	}
	return fmt.Sprintf("MBR: reading up to the end of the last partition, %s of %s", units.FormatSize(e.Size), units.FormatSize(e.Capacity))
}

// readBound names the side that limited a read.
func readBound(res pipeline.ReadResult) bound {
	switch res.Bound {
	case pipeline.BoundSink:
		return boundSink
	case pipeline.BoundDevice:
		return boundDevice
	}
	return boundNone
}

func readBoundLine(res pipeline.ReadResult) string {
	if res.Bound == pipeline.BoundSink {
		return fmt.Sprintf("Bottleneck: compressing and writing the file (busy %.1fx longer than the card)", res.BoundRatio)
	}
	return fmt.Sprintf("Bottleneck: the card (busy %.1fx longer than compressing and writing)", res.BoundRatio)
}
