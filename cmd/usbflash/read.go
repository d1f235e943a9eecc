package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"usbflash/target"

	"github.com/spf13/cobra"

	"usbflash/bmap"
	"usbflash/imagedst"
	"usbflash/internal/parttable"
	"usbflash/internal/units"
	"usbflash/pipeline"
)

// readFlags are the options of `usbflash read`.
type readFlags struct {
	size                string
	used, force, verify bool
	transferSize        string
	buffers             int
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

OUT is written as OUT.part and renamed only when complete: an interrupted or
failed read leaves no file that looks finished. An existing OUT is not
overwritten without --force. --used stops after the last partition of the
MBR or GPT; --size reads that many bytes; otherwise the whole card is read.

The buffers take a few transfer sizes of memory, at most ` + units.FormatSize(pipeline.MaxBufferMemory) + `.`,
		Args:              exactArgs(2, "TARGET and OUT"),
		ValidArgsFunction: readArgs,
		RunE: func(c *cobra.Command, args []string) error {
			rep := a.reporterFor(f.asJSON, f.quiet)
			return a.reported(rep, func() error {
				t, err := target.Parse(args[0])
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
	addTransferFlag(c, &f.transferSize, "bytes per READ command")
	fl.IntVar(&f.buffers, "buffers", pipeline.DefaultBuffers, "buffers cycling between the card and the compressor (at least 2)")
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

// sizes checks the numeric flags: the transfer size and where to stop
// (-1: decided on the card).
func (f readFlags) sizes() (transfer, want int64, err error) {
	transfer, err = parseTransfer(f.transferSize, f.buffers)
	want = -1
	switch {
	case err != nil:
		return 0, 0, err
	case f.size != "" && f.used:
		return 0, 0, &usageError{"--size and --used both say where to stop: pass one"}
	case f.size != "":
		if want, err = units.ParseSize(f.size); err != nil || want <= 0 {
			return 0, 0, &usageError{fmt.Sprintf("--size %q: want a positive size such as 4GiB", f.size)}
		}
	}
	return transfer, want, nil
}

func (a *app) backup(ctx context.Context, rep reporter, t target.Spec, out string, f readFlags) error {
	transfer, want, err := f.sizes()
	if err != nil {
		return err
	}
	if out == "-" || strings.HasSuffix(out, "/") {
		return &usageError{fmt.Sprintf("OUT %q: want a file name (its extension picks the compression)", out)}
	}
	if !f.force {
		for _, p := range []string{out, out + ".bmap"} {
			if _, err := os.Lstat(p); err == nil {
				return &refusedError{fmt.Sprintf("%s already exists: pass --force to overwrite it; nothing was read", p)}
			}
		}
	}

	// Said before the first command to the target: a reader that does not
	// answer must not leave the user looking at nothing.
	format := imagedst.FormatOf(out)
	rep.event(&readStartEvent{
		eventHeader: eventHeader{Event: evStart}, Command: cmdRead,
		Target: t.Raw, Out: out, Format: format, TransferSize: transfer, Buffers: f.buffers,
	}, fmt.Sprintf("Backing %s up to %s (%s) ...", t.Raw, out, format))
	readers, err := a.newReaders()
	if err != nil {
		return err
	}
	d, err := target.Open(ctx, t, target.Options{ReadOnly: true, Force: f.force, OnNotice: noticeNotes(rep), Readers: readers})
	if err != nil {
		return err
	}
	defer d.Close()
	transfer = openedDevice(rep, d, transfer)
	size, table, err := readSize(ctx, d, want, f.used, rep)
	if err != nil {
		return err
	}

	file, err := imagedst.Create(out, f.force)
	if errors.Is(err, imagedst.ErrExists) {
		return &refusedError{fmt.Sprintf("%v: pass --force to overwrite it; nothing was read", err)}
	} else if err != nil {
		return &codedError{exitSource, fmt.Errorf("creating the backup: %w", err)}
	}
	defer file.Abort()

	builder := bmap.NewBuilder(0)
	res, err := pipeline.Read(ctx, d.Dev, io.MultiWriter(outputFile{file}, builder), size, pipeline.ReadOptions{
		Name: d.Name, TransferSize: int(transfer), Buffers: f.buffers, Progress: progressFunc(rep, nil),
	})
	if err != nil {
		return err
	}
	if err := file.Commit(); err != nil {
		return &codedError{exitSource, err}
	}
	m := builder.Map()
	mapData, err := bmap.Marshal(m)
	if err == nil {
		err = imagedst.WriteFile(out+".bmap", mapData)
	}
	if err != nil {
		return &codedError{exitSource, fmt.Errorf("writing the block map %s.bmap (%s itself is complete): %w", out, out, err)}
	}
	sum := &readSummaryEvent{
		eventHeader: eventHeader{Event: evSummary}, Command: cmdRead,
		Bytes: res.Bytes, Reads: res.Reads, ElapsedS: res.Elapsed.Seconds(), Rate: rate(res.Bytes, res.Elapsed),
		SHA256: hex.EncodeToString(res.SHA256[:]), Out: out, Format: file.Format(), OutBytes: file.Written(),
		BMap: out + ".bmap", MappedBytes: m.MappedBytes(), Bound: readBound(res), BoundRatio: res.BoundRatio,
		PartitionTable: table,
	}
	text := []string{
		fmt.Sprintf("Read %s in %s (%s), %s", units.FormatBytes(res.Bytes), res.Elapsed.Round(time.Millisecond),
			units.FormatRate(sum.Rate), plural(res.Reads, "command")),
		fmt.Sprintf("Wrote %s (%s, %s) and its block map %s.bmap (%s of the image is not zero)", out, file.Format(), units.FormatSize(file.Written()), out, units.FormatSize(m.MappedBytes())),
		readBoundLine(res),
	}
	if f.verify {
		v, err := pipeline.VerifyHash(ctx, d.Dev, size, res.SHA256, pipeline.VerifyOptions{
			Name: d.Name, TransferSize: int(transfer), Progress: progressFunc(rep, nil),
		})
		if err != nil {
			return err
		}
		sum.Verified = true
		sum.VerifyElapsedS = ptr(v.Elapsed.Seconds())
		text = append(text, fmt.Sprintf("Verified: a second read of %s matches (%s)", units.FormatSize(v.Bytes), v.Elapsed.Round(time.Millisecond)))
	}
	text = append(text, "SHA-256 "+sum.SHA256)
	rep.event(sum, strings.Join(text, "\n"))
	return nil
}

// readSize decides how much of the card to read: --size, the end of the
// last partition (--used), or everything. With --used it also names the
// partition table it found (MBR, GPT or none).
func readSize(ctx context.Context, d *target.Device, want int64, used bool, rep reporter) (int64, string, error) {
	capacity := d.Capacity()
	switch {
	case want > capacity:
		return 0, "", &refusedError{fmt.Sprintf("--size %s is more than %s holds (%s); nothing was read", units.FormatSize(want), d.Name, units.FormatSize(capacity))}
	case want > 0:
		return want, "", nil
	case !used:
		return capacity, "", nil
	}
	bs := d.Dev.BlockSize()
	tab, err := parttable.End(func(off int64, p []byte) error {
		return d.Dev.ReadBlocks(ctx, off/int64(bs), p)
	}, bs, capacity)
	if err != nil {
		return 0, "", &codedError{exitDevice, fmt.Errorf("reading the partition table of %s: %w", d.Name, err)}
	}
	var msg string
	kind := tab.Kind
	switch tab.Kind {
	case parttable.None:
		kind = "none"
		msg = fmt.Sprintf("%s has no partition table: reading the whole card", d.Name)
		tab.End = capacity
	case parttable.GPT:
		msg = fmt.Sprintf("GPT: reading up to the end of the last partition, %s; the backup GPT at the end of the card is not included (sgdisk -e rebuilds it after a restore)", units.FormatSize(tab.End))
	default:
		msg = fmt.Sprintf("MBR: reading up to the end of the last partition, %s of %s", units.FormatSize(tab.End), units.FormatSize(capacity))
	}
	rep.event(newNote(msg), msg)
	return tab.End, kind, nil
}

// outputFile gives failures to write the backup the image error's exit
// code: a full or failing disk is not a bug of usbflash.
type outputFile struct{ f *imagedst.File }

func (o outputFile) Write(p []byte) (int, error) {
	n, err := o.f.Write(p)
	if err != nil {
		err = &codedError{exitSource, fmt.Errorf("writing %s: %w", o.f.Path(), err)}
	}
	return n, err
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
