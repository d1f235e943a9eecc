package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"usbflash/imagesrc"
	"usbflash/internal/units"
	"usbflash/pipeline"
)

// writeFlags are the options of `usbflash write`.
type writeFlags struct {
	yes, force, noVerify, eject bool
	transferSize                string
	buffers                     int
	asJSON, quiet               bool
	bmap                        blockMapFlags
}

func newWriteCommand(a *app) *cobra.Command {
	var f writeFlags
	c := &cobra.Command{
		Use:   "write IMAGE TARGET",
		Short: "Write an OS image to a card, sync, and verify it",
		Long: `Write IMAGE (raw, gzip, xz, zstd, bzip2, or a zip holding one image; the
format is read from the file's bytes, not its name; - is standard input) to
TARGET, then sync and read the card back to verify it.

Before the first byte is written usbflash shows the target and asks for
confirmation, and refuses a write-protected card, an image larger than the
card, and (for usb: and file: targets) a disk with mounted partitions.

The first transfer is written last, after its region was zeroed first, so
an interrupted write never leaves a card that looks bootable. Ctrl-C stops
after the command in flight, syncs and reports how far the write got.`,
		Args: exactArgs(2, "IMAGE and TARGET"),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := parseTarget(args[1])
			if err != nil {
				return err
			}
			return a.write(c.Context(), args[0], t, f)
		},
	}
	fl := c.Flags()
	fl.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation (required without a terminal)")
	fl.BoolVar(&f.force, "force", false, "write even though the target's disk is mounted")
	fl.BoolVar(&f.noVerify, "no-verify", false, "skip reading the card back after writing (and hashing the image)")
	fl.BoolVar(&f.eject, "eject", false, "eject the card when done")
	fl.StringVar(&f.transferSize, "transfer-size", units.FormatSize(pipeline.DefaultTransferSize),
		"bytes per WRITE command, a multiple of the block size (e.g. 120KiB, 4MiB, 32MiB)")
	fl.IntVar(&f.buffers, "buffers", pipeline.DefaultBuffers, "buffers cycling between decoder and writer (at least 2)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per line (start, progress, phase, summary, error)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	f.bmap.register(fl)
	return c
}

func (a *app) reporterFor(asJSON, quiet bool) reporter {
	mode := modeText
	switch {
	case asJSON:
		mode = modeJSON
	case quiet:
		mode = modeQuiet
	}
	return newReporter(mode, a.stdout, a.stderr, isTerminal(a.stderr))
}

func (a *app) write(ctx context.Context, image string, t target, f writeFlags) (err error) {
	rep := a.reporterFor(f.asJSON, f.quiet)
	defer func() {
		if err != nil {
			rep.fail(err, exitCode(err))
			err = &reportedError{err}
		}
	}()
	transfer, err := units.ParseSize(f.transferSize)
	if err != nil {
		return &usageError{fmt.Sprintf("--transfer-size: %v", err)}
	}
	if f.buffers < 2 {
		return &usageError{fmt.Sprintf("--buffers %d: want at least 2, so decoding overlaps writing", f.buffers)}
	}

	src, err := imagesrc.Open(image)
	if err != nil {
		return sourceError(image, err)
	}
	defer src.Close()
	plan, err := planWrite(image, src, f.bmap, rep)
	if err != nil {
		return err
	}

	d, err := openTarget(ctx, t, openOptions{force: f.force, newFileSize: (max(expectedSize(src), 0) + 511) / 512 * 512})
	if err != nil {
		return err
	}
	defer d.Close()

	transfer, note := fitTransfer(d, transfer)
	if note != "" {
		rep.event("note", map[string]any{"message": note}, note)
	}
	if err := checkBeforeWrite(d, src); err != nil {
		return err
	}
	if !f.yes {
		if err := a.confirm(d, image, src); err != nil {
			return err
		}
	}

	rep.event("start", map[string]any{
		"image": image, "format": src.Format.String(), "size": src.Size, "size_exact": src.SizeExact,
		"compressed_size": src.CompressedSize, "target": d.name, "capacity": d.capacity(),
		"transfer_size": transfer, "buffers": f.buffers,
	}, fmt.Sprintf("Writing %s (%s, %s) to %s with %s transfers", image, src.Format, describeSize(src), d.name, units.FormatSize(transfer)))

	dev := named(d)
	res, err := pipeline.Write(ctx, dev, plan.source(src), plan.options(pipeline.WriteOptions{
		TransferSize: int(transfer), Buffers: f.buffers, ExpectedSize: expectedSize(src),
		Progress: progressFunc(rep, src), Sync: true, HashAlg: hashFor(f),
	}))
	if err != nil {
		return writeError(err)
	}
	summary := map[string]any{
		"bytes": res.Bytes, "bytes_written": res.BytesWritten, "transfers": res.Transfers,
		"elapsed_s": res.Elapsed.Seconds(), "rate": rate(res.Bytes, res.Elapsed),
		"sha256": hex.EncodeToString(res.SHA256[:]), "bound": res.Bound, "bound_ratio": res.BoundRatio,
		"decoder_wait_s": res.DecoderWait.Seconds(), "device_wait_s": res.DeviceWait.Seconds(),
	}
	text := []string{
		fmt.Sprintf("Wrote %s in %s (%s), %d commands", units.FormatSize(res.Bytes), res.Elapsed.Round(time.Millisecond), units.FormatRate(rate(res.Bytes, res.Elapsed)), res.Transfers),
		boundLine(res),
	}
	text = append(text, plan.summary(summary, res)...)

	if !f.noVerify {
		want, vopts := plan.verify(res, pipeline.VerifyOptions{
			TransferSize: int(transfer), Progress: progressFunc(rep, nil),
		})
		v, err := pipeline.VerifyHash(ctx, dev, res.Bytes, want, vopts)
		if err != nil {
			return a.locateMismatch(ctx, image, dev, res.Bytes, vopts, err)
		}
		summary["verified"] = true
		summary["verify_elapsed_s"] = v.Elapsed.Seconds()
		text = append(text, fmt.Sprintf("Verified %s read back in %s (%s)", units.FormatSize(v.Bytes), v.Elapsed.Round(time.Millisecond), units.FormatRate(rate(v.Bytes, v.Elapsed))))
	}
	if f.eject && d.lun != nil {
		if err := d.lun.Eject(ctx); err != nil {
			text = append(text, fmt.Sprintf("Eject failed (the image is written and synced): %v", err))
		} else {
			text = append(text, "Ejected")
		}
	}
	if f.noVerify {
		delete(summary, "sha256")
	} else {
		text = append(text, "SHA-256 "+hex.EncodeToString(res.SHA256[:]))
	}
	rep.event("summary", summary, strings.Join(text, "\n"))
	return nil
}

// hashFor skips hashing the image when nothing will use the hash: a slow
// CPU (an embedded host, an emulator) hashes at a few tens of MB/s.
func hashFor(f writeFlags) string {
	if f.noVerify {
		return pipeline.HashNone
	}
	return pipeline.HashSHA256
}

// named gives the pipeline the target's name for its messages.
func named(d *device) pipeline.BlockDevice { return namedDevice{d.dev, d.name} }

type namedDevice struct {
	pipeline.BlockDevice
	name string
}

func (n namedDevice) String() string { return n.name }

// fitTransfer lowers the transfer size to what the device says it takes
// (VPD block limits) and rounds it to whole blocks.
func fitTransfer(d *device, transfer int64) (int64, string) {
	bs := int64(d.dev.BlockSize())
	var note string
	if d.lun != nil && d.lun.MaxTransfer() > 0 {
		if limit := d.lun.MaxTransfer() * bs; transfer > limit {
			note = fmt.Sprintf("%s takes at most %s per command: using that instead of %s", d.name, units.FormatSize(limit), units.FormatSize(transfer))
			transfer = limit
		}
	}
	if transfer%bs != 0 || transfer == 0 {
		rounded := max(transfer/bs*bs, bs)
		note = strings.TrimPrefix(note+"; ", "; ") + fmt.Sprintf("transfer size rounded to %s, a whole number of %d-byte blocks", units.FormatSize(rounded), bs)
		transfer = rounded
	}
	return transfer, note
}

// checkBeforeWrite refuses, before anything is written, what can be known
// to fail: a write-protected medium and an image that does not fit.
func checkBeforeWrite(d *device, src *imagesrc.Source) error {
	if d.lun != nil && d.lun.WriteProtected() {
		return &refusedError{fmt.Sprintf("%s is write-protected: slide the card's lock switch to unlock it, or use another card; nothing was written", d.name)}
	}
	// A size hint (gzip's ISIZE, the length modulo 4 GiB) never exceeds
	// the true size, so a hint that does not fit is as good as a fact.
	if src.Size > d.capacity() {
		return &refusedError{fmt.Sprintf("image is %s (%d bytes) but %s holds %s (%d bytes): use a larger card; nothing was written",
			units.FormatSize(src.Size), src.Size, d.name, units.FormatSize(d.capacity()), d.capacity())}
	}
	return nil
}

// confirm asks the person at the terminal; without one it refuses, so a
// script never writes to a card it did not name with --yes.
func (a *app) confirm(d *device, image string, src *imagesrc.Source) error {
	if !a.interactive {
		return &refusedError{fmt.Sprintf("not confirmed: no terminal to ask whether to overwrite %s; pass --yes to write without asking", d.name)}
	}
	fmt.Fprintf(a.stderr, "Target: %s\n%s\nWrite %s (%s, %s) to it? ALL DATA ON IT WILL BE LOST. [y/N] ",
		d.name, identityLine(d), image, src.Format, describeSize(src))
	answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return &refusedError{fmt.Sprintf("not confirmed: nothing was written to %s", d.name)}
}

// identityLine is the one line that lets a person recognise a card.
func identityLine(d *device) string {
	var parts []string
	if d.usb != nil {
		parts = append(parts, strings.TrimSpace(d.usb.Manufacturer+" "+d.usb.Product), "serial "+orDash(d.usb.Serial))
	}
	if d.lun != nil {
		inq := d.lun.Inquiry()
		parts = append(parts, strings.TrimSpace(inq.Vendor+" "+inq.Product+" "+inq.Revision))
		if s := d.lun.Serial(); s != "" {
			parts = append(parts, "card serial "+s)
		}
	}
	parts = append(parts, units.FormatSize(d.capacity()))
	return "  " + strings.Join(parts, ", ")
}

func describeSize(src *imagesrc.Source) string {
	switch {
	case src.Size < 0:
		return "size unknown until decoded"
	case !src.SizeExact:
		return "about " + units.FormatSize(src.Size)
	}
	return units.FormatSize(src.Size)
}

func expectedSize(src *imagesrc.Source) int64 {
	if src.SizeExact {
		return src.Size
	}
	return -1
}

// progressFunc adapts pipeline progress to the reporter. With no known image
// size, write progress counts compressed bytes read against the file size.
func progressFunc(rep reporter, src *imagesrc.Source) func(pipeline.Progress) {
	return func(p pipeline.Progress) {
		done, total := p.Done, p.Total
		if total < 0 && src != nil && src.CompressedSize > 0 && p.Phase == pipeline.PhaseWrite {
			done, total = src.CompressedRead(), src.CompressedSize
		}
		rep.progress(p.Phase, done, total, p.Rate)
	}
}

func boundLine(res pipeline.WriteResult) string {
	switch res.Bound {
	case "decoder":
		return fmt.Sprintf("Bottleneck: the decoder (busy %.1fx longer than the device; the writer waited %s for data)", res.BoundRatio, res.DecoderWait.Round(time.Millisecond))
	case "device":
		return fmt.Sprintf("Bottleneck: the device (busy %.1fx longer than the decoder; the decoder waited %s for free buffers)", res.BoundRatio, res.DeviceWait.Round(time.Millisecond))
	}
	return "Bottleneck: none measured"
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// locateMismatch turns a hash mismatch into the first differing LBA by
// comparing the card with a fresh decode of the image.
func (a *app) locateMismatch(ctx context.Context, image string, dev pipeline.BlockDevice, size int64, opts pipeline.VerifyOptions, hashErr error) error {
	var ve *pipeline.VerifyError
	if !errors.As(hashErr, &ve) || !ve.HashOnly {
		return writeError(hashErr)
	}
	src, err := imagesrc.Open(image)
	if err != nil {
		return hashErr
	}
	defer src.Close()
	_, err = pipeline.Verify(ctx, dev, src, size, pipeline.VerifyOptions{TransferSize: opts.TransferSize, Only: opts.Only})
	if err == nil {
		// The card reads back right now: the first read was wrong. Say so.
		return fmt.Errorf("%w (a second, byte-by-byte comparison found no difference: the reader returned inconsistent data)", hashErr)
	}
	return writeError(err)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
