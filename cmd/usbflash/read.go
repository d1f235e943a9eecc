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
MBR or GPT; --size reads that many bytes; otherwise the whole card is read.`,
		Args: exactArgs(2, "TARGET and OUT"),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			return a.read(c.Context(), t, args[1], f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.size, "size", "", "read only this many bytes from the start of the card (e.g. 4GiB)")
	fl.BoolVar(&f.used, "used", false, "stop after the last partition of the card's MBR or GPT")
	fl.BoolVar(&f.force, "force", false, "overwrite OUT, and read a card whose disk is mounted")
	fl.BoolVar(&f.verify, "verify", false, "read the card a second time and compare")
	fl.StringVar(&f.transferSize, "transfer-size", units.FormatSize(pipeline.DefaultTransferSize), "bytes per READ command, a multiple of the block size")
	fl.IntVar(&f.buffers, "buffers", pipeline.DefaultBuffers, "buffers cycling between the card and the compressor (at least 2)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per line (start, note, progress, phase, summary, error)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	return c
}

func (a *app) read(ctx context.Context, t target, out string, f readFlags) error {
	rep := a.reporterFor(f.asJSON, f.quiet)
	return reported(rep, a.backup(ctx, rep, t, out, f))
}

// reported presents the error that ends a command, once.
func reported(rep reporter, err error) error {
	if err == nil {
		return nil
	}
	rep.fail(err, exitCode(err))
	return &reportedError{err}
}

// sizes checks the numeric flags: the transfer size and where to stop
// (-1: decided on the card).
func (f readFlags) sizes() (transfer, want int64, err error) {
	transfer, terr := units.ParseSize(f.transferSize)
	want = -1
	switch {
	case terr != nil:
		return 0, 0, &usageError{fmt.Sprintf("--transfer-size: %v", terr)}
	case f.buffers < 2:
		return 0, 0, &usageError{fmt.Sprintf("--buffers %d: want at least 2, so reading overlaps compressing", f.buffers)}
	case f.size != "" && f.used:
		return 0, 0, &usageError{"--size and --used both say where to stop: pass one"}
	case f.size != "":
		if want, err = units.ParseSize(f.size); err != nil || want <= 0 {
			return 0, 0, &usageError{fmt.Sprintf("--size %q: want a positive size such as 4GiB", f.size)}
		}
	}
	return transfer, want, nil
}

func (a *app) backup(ctx context.Context, rep reporter, t target, out string, f readFlags) error {
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

	d, err := openTarget(ctx, t, openOptions{force: f.force})
	if err != nil {
		return err
	}
	defer d.Close()
	transfer, note := fitTransfer(d, transfer)
	if note != "" {
		rep.event("note", map[string]any{"message": note}, note)
	}
	size, err := readSize(ctx, d, want, f.used, rep)
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
	rep.event("start", map[string]any{
		"target": d.name, "capacity": d.capacity(), "size": size, "out": out, "format": file.Format(),
		"transfer_size": transfer, "buffers": f.buffers,
	}, fmt.Sprintf("Reading %s of %s to %s (%s) with %s transfers", units.FormatSize(size), d.name, out, file.Format(), units.FormatSize(transfer)))

	dev := named(d)
	builder := bmap.NewBuilder(0)
	res, err := pipeline.Read(ctx, dev, io.MultiWriter(outputFile{file}, builder), size, pipeline.ReadOptions{
		TransferSize: int(transfer), Buffers: f.buffers, Progress: progressFunc(rep, nil),
	})
	if err != nil {
		return writeError(err)
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
	sum := hex.EncodeToString(res.SHA256[:])
	summary := map[string]any{
		"bytes": res.Bytes, "reads": res.Reads, "elapsed_s": res.Elapsed.Seconds(), "rate": rate(res.Bytes, res.Elapsed),
		"sha256": sum, "out": out, "format": file.Format(), "out_bytes": file.Written(),
		"bmap": out + ".bmap", "mapped_bytes": m.MappedBytes(), "bound": res.Bound, "bound_ratio": res.BoundRatio,
	}
	text := []string{
		fmt.Sprintf("Read %s in %s (%s), %d commands", units.FormatSize(res.Bytes), res.Elapsed.Round(time.Millisecond), units.FormatRate(rate(res.Bytes, res.Elapsed)), res.Reads),
		fmt.Sprintf("Wrote %s (%s, %s) and its block map %s.bmap (%s of the image is not zero)", out, file.Format(), units.FormatSize(file.Written()), out, units.FormatSize(m.MappedBytes())),
		readBoundLine(res),
	}
	if f.verify {
		v, err := pipeline.VerifyHash(ctx, dev, size, res.SHA256, pipeline.VerifyOptions{
			TransferSize: int(transfer), Progress: progressFunc(rep, nil),
		})
		if err != nil {
			return writeError(err)
		}
		summary["verified"] = true
		text = append(text, fmt.Sprintf("Verified: a second read of %s matches (%s)", units.FormatSize(v.Bytes), v.Elapsed.Round(time.Millisecond)))
	}
	text = append(text, "SHA-256 "+sum)
	rep.event("summary", summary, strings.Join(text, "\n"))
	return nil
}

// readSize decides how much of the card to read: --size, the end of the
// last partition (--used), or everything.
func readSize(ctx context.Context, d *device, want int64, used bool, rep reporter) (int64, error) {
	capacity := d.capacity()
	switch {
	case want > capacity:
		return 0, &refusedError{fmt.Sprintf("--size %s is more than %s holds (%s); nothing was read", units.FormatSize(want), d.name, units.FormatSize(capacity))}
	case want > 0:
		return want, nil
	case !used:
		return capacity, nil
	}
	bs := d.dev.BlockSize()
	tab, err := parttable.End(func(off int64, p []byte) error {
		return d.dev.ReadBlocks(ctx, off/int64(bs), p)
	}, bs, capacity)
	if err != nil {
		return 0, &codedError{exitDevice, fmt.Errorf("reading the partition table of %s: %w", d.name, err)}
	}
	var msg string
	switch tab.Kind {
	case parttable.None:
		msg = fmt.Sprintf("%s has no partition table: reading the whole card", d.name)
		tab.End = capacity
	case parttable.GPT:
		msg = fmt.Sprintf("GPT: reading up to the end of the last partition, %s; the backup GPT at the end of the card is not included (sgdisk -e rebuilds it after a restore)", units.FormatSize(tab.End))
	default:
		msg = fmt.Sprintf("MBR: reading up to the end of the last partition, %s of %s", units.FormatSize(tab.End), units.FormatSize(capacity))
	}
	rep.event("note", map[string]any{"message": msg, "partition_table": tab.Kind, "end": tab.End}, msg)
	return tab.End, nil
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

func readBoundLine(res pipeline.ReadResult) string {
	if res.Bound == "sink" {
		return fmt.Sprintf("Bottleneck: compressing and writing the file (busy %.1fx longer than the card)", res.BoundRatio)
	}
	return fmt.Sprintf("Bottleneck: the card (busy %.1fx longer than compressing and writing)", res.BoundRatio)
}
