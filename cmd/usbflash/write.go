package main

import (
	"bufio"
	"context"
	"encoding/hex"
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
	// Many cards at once (multi.go, watch.go).
	all, watch, skipRefused bool
	lag                     int
	report                  string
	bmap                    blockMapFlags // bmap.go
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
an interrupted write never leaves a card that looks bootable. Ctrl-C,
SIGTERM and SIGHUP stop after the command in flight, sync and report how
far the write got (exit 130). A closed standard output (--json | head)
does not stop a write.

The buffers take (buffers + 2) x transfer size of memory, at most ` + units.FormatSize(pipeline.MaxBufferMemory) + `.`,
		Args:              writeArgs(&f),
		ValidArgsFunction: targetArgs(true),
		RunE: func(c *cobra.Command, args []string) error {
			rep := a.reporterFor(f.asJSON, f.quiet)
			return a.reported(rep, func() error {
				transfer, err := parseTransfer(f.transferSize, f.buffers)
				if err != nil {
					return err
				}
				if err := checkManyFlags(f); err != nil {
					return err
				}
				if err := f.bmap.checkOneCard(f.all || f.watch || f.report != "" || len(args) > 2); err != nil {
					return err
				}
				if f.watch {
					return a.watch(c.Context(), rep, args[0], f, transfer, usbReaders(f.force))
				}
				ts, err := a.writeTargets(c.Context(), args[1:], f)
				if err != nil {
					return err
				}
				if len(ts) == 1 && f.report == "" {
					return a.write(c.Context(), rep, args[0], ts[0], transfer, f)
				}
				return a.writeMany(c.Context(), rep, args[0], ts, f, transfer)
			})
		},
	}
	fl := c.Flags()
	fl.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation (required without a terminal)")
	fl.BoolVar(&f.force, "force", false, "write even though the target's disk is mounted, or the image is smaller than one transfer")
	fl.BoolVar(&f.noVerify, "no-verify", false, "skip reading the card back after writing (and hashing the image)")
	fl.BoolVar(&f.eject, "eject", false, "eject the card when done (usb: and sim: targets)")
	addTransferFlag(c, &f.transferSize, "bytes per WRITE command")
	fl.IntVar(&f.buffers, "buffers", pipeline.DefaultBuffers, "buffers cycling between decoder and writer (at least 2)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per line on stdout (start, device, phase, progress, note, summary, error)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only errors; with --json, only the summary or error event")
	fl.BoolVar(&f.all, "all", false, "write every reader that holds a card and is not in use (listed, then confirmed)")
	fl.BoolVar(&f.watch, "watch", false, "stay running and write every card inserted into any reader (or any reader plugged in), each once, until Ctrl-C; needs --yes")
	fl.BoolVar(&f.skipRefused, "skip-refused", false, "with several targets: write the others when some are refused (write-protected, too small, in use)")
	fl.IntVar(&f.lag, "lag", DefaultLag, "with several targets: transfers a card may fall behind before it holds the others back (0: lockstep)")
	fl.StringVar(&f.report, "report", "", "with several targets or --watch: save a record of every card to this .json or .csv file")
	f.bmap.register(fl)
	return c
}

// checkManyFlags checks the flags of a many-card write before anything is
// opened.
func checkManyFlags(f writeFlags) error {
	if f.lag < 0 {
		return &usageError{fmt.Sprintf("--lag %d: want 0 (lockstep) or more", f.lag)}
	}
	if f.report != "" {
		if _, err := reportFormat(f.report); err != nil {
			return err
		}
	}
	return nil
}

// addTransferFlag adds --transfer-size, with completion of useful values.
func addTransferFlag(c *cobra.Command, v *string, what string) {
	c.Flags().StringVar(v, "transfer-size", units.FormatSize(pipeline.DefaultTransferSize),
		what+", a multiple of the block size (e.g. 512KiB, 4MiB, 32MiB)")
	_ = c.RegisterFlagCompletionFunc("transfer-size", completeTransferSize)
}

// parseTransfer checks --transfer-size and --buffers before anything is
// opened: their buffers must fit in the memory bound.
func parseTransfer(transferSize string, buffers int) (int64, error) {
	transfer, err := units.ParseSize(transferSize)
	switch {
	case err != nil:
		return 0, &usageError{fmt.Sprintf("--transfer-size: %v", err)}
	case transfer == 0:
		return 0, &usageError{"--transfer-size 0: want at least one block (512 bytes)"}
	case buffers < 2:
		return 0, &usageError{fmt.Sprintf("--buffers %d: want at least 2, so decoding overlaps writing", buffers)}
	}
	// One factor at a time first, so the product cannot overflow.
	if transfer > pipeline.MaxBufferMemory || int64(buffers) > pipeline.MaxBufferMemory ||
		pipeline.BufferMemory(int(transfer), buffers) > pipeline.MaxBufferMemory {
		return 0, &usageError{fmt.Sprintf("--transfer-size %s with --buffers %d needs %d buffers of %s, more than the %s the buffers may take: use a smaller transfer size or fewer buffers",
			units.FormatSize(transfer), buffers, buffers+2, units.FormatSize(transfer), units.FormatSize(pipeline.MaxBufferMemory))}
	}
	return transfer, nil
}

func (a *app) reporterFor(asJSON, quiet bool) reporter {
	return &lockedReporter{r: newReporter(a.stdout, a.stderr, reporterOptions{json: asJSON, quiet: quiet, terminal: a.stderrTerminal})}
}

// reported runs a command's body and reports its error through rep, so a
// JSON run ends with an error event and a progress bar is closed first.
func (a *app) reported(rep reporter, body func() error) error {
	err := body()
	if err != nil {
		rep.fail(err, exitCode(err))
		err = &reportedError{err}
	}
	return err
}

func (a *app) write(ctx context.Context, rep reporter, image string, t target, transfer int64, f writeFlags) error {
	src, err := imagesrc.Open(image)
	if err != nil {
		return sourceError(err)
	}
	defer src.Close()
	plan, err := planWrite(image, src, f.bmap, rep)
	if err != nil {
		return err
	}

	// Said before the first command to the target: a reader that does not
	// answer must not leave the user looking at nothing.
	rep.event(&startEvent{
		eventHeader: eventHeader{Event: evStart}, Command: cmdWrite,
		Image: image, Format: src.Format.String(), Size: src.Size, SizeExact: src.SizeExact,
		CompressedSize: src.CompressedSize, Target: t.raw, TransferSize: transfer, Buffers: f.buffers,
	}, fmt.Sprintf("Writing %s (%s, %s) to %s ...", image, src.Format, describeSize(src), t.raw))

	d, err := openTarget(ctx, t, openOptions{force: f.force, newFileSize: (max(expectedSize(src), 0) + 511) / 512 * 512,
		onRecovery: recoveryNotes(rep), image: image})
	if err != nil {
		return err
	}
	defer d.Close()

	transfer = openedDevice(rep, d, transfer)
	if err := checkImageSize(src, int(transfer), f.force); err != nil {
		return err
	}
	if err := checkBeforeWrite(d, src); err != nil {
		return err
	}
	if !f.yes {
		if err := a.confirm(d, image, src); err != nil {
			return err
		}
	}

	hash := hashFor(f.noVerify)
	d.markWritten()
	res, err := pipeline.Write(ctx, d.dev, plan.source(src), plan.options(pipeline.WriteOptions{
		Name: d.name, TransferSize: int(transfer), Buffers: f.buffers, ExpectedSize: expectedSize(src),
		Progress: progressFunc(rep, src), Sync: true, HashAlg: hash,
	}))
	if err != nil {
		return err
	}
	if err := src.CheckUnchanged(); err != nil {
		return sourceError(err) // the hash is of no one image: do not verify with it
	}
	sum := &summaryEvent{
		eventHeader: eventHeader{Event: evSummary}, Command: cmdWrite,
		Bytes: res.Bytes, BytesWritten: res.BytesWritten, Transfers: int64(res.Transfers),
		ElapsedS: res.Elapsed.Seconds(), Rate: rate(res.Bytes, res.Elapsed),
		Bound: boundOf(res), BoundRatio: res.BoundRatio,
		DecoderWaitS: ptr(res.DecoderWait.Seconds()), DeviceWaitS: ptr(res.DeviceWait.Seconds()),
		Memory: res.Memory, CPUS: res.CPU.Seconds(), CPUPerGiB: perGiB(res.CPU, res.Bytes),
	}
	text := []string{
		fmt.Sprintf("Wrote %s in %s (%s), %s", formatBytes(res.Bytes), res.Elapsed.Round(time.Millisecond),
			units.FormatRate(sum.Rate), plural(res.Transfers, "command")),
		boundLine(res),
		cpuLine(res.CPU, res.Bytes, res.Memory),
	}
	text = append(text, plan.summary(sum, res)...)

	if !f.noVerify {
		want, vopts := plan.verify(res, pipeline.VerifyOptions{
			Name: d.name, TransferSize: int(transfer), Progress: progressFunc(rep, nil),
		})
		v, err := pipeline.VerifyHash(ctx, d.dev, res.Bytes, want, vopts)
		if err != nil {
			reopen := func() (io.ReadCloser, error) { return imagesrc.Open(image) }
			return pipeline.LocateMismatch(ctx, d.dev, reopen, res.Bytes, vopts, err)
		}
		sum.Verified = true
		sum.VerifyElapsedS = ptr(v.Elapsed.Seconds())
		sum.SHA256 = hex.EncodeToString(res.SHA256[:])
		text = append(text, fmt.Sprintf("Verified %s read back in %s (%s)", formatBytes(v.Bytes),
			v.Elapsed.Round(time.Millisecond), units.FormatRate(rate(v.Bytes, v.Elapsed))))
	}
	if f.eject {
		text = append(text, eject(ctx, rep, d, sum))
	}
	if sum.Verified {
		text = append(text, "SHA-256 "+sum.SHA256)
	}
	rep.event(sum, strings.Join(text, "\n"))
	return nil
}

// openedDevice reports the opened target and fits the transfer size to it.
func openedDevice(rep reporter, d *device, transfer int64) int64 {
	transfer, note := fitTransfer(d, transfer)
	rep.event(&deviceEvent{eventHeader: eventHeader{Event: evDevice}, Target: d.name, Capacity: d.capacity(),
		BlockSize: d.dev.BlockSize(), TransferSize: transfer}, "")
	if note != "" {
		rep.event(&noteEvent{eventHeader{Event: evNote}, note}, note)
	}
	return transfer
}

// eject ejects the card if the target has one and says how it went.
func eject(ctx context.Context, rep reporter, d *device, sum *summaryEvent) string {
	sum.Ejected = ptr(false)
	if d.lun == nil {
		note := "--eject does nothing for a file: target"
		rep.event(&noteEvent{eventHeader{Event: evNote}, note}, "")
		return "Not ejected: " + note
	}
	if err := d.lun.Eject(ctx); err != nil {
		return fmt.Sprintf("Eject failed (the image is written and synced): %v", err)
	}
	sum.Ejected = ptr(true)
	return "Ejected"
}

// recoveryNotes passes the transport's recovery steps to the user.
func recoveryNotes(rep reporter) func(string) {
	return func(step string) {
		rep.event(&noteEvent{eventHeader{Event: evNote}, step}, step)
	}
}

func boundOf(res pipeline.WriteResult) bound {
	if b := bound(res.Bound); b == boundDecoder || b == boundDevice {
		return b
	}
	return boundNone
}

// hashFor skips hashing the image when nothing will use the hash: a slow
// CPU (an embedded host, an emulator) hashes at a few tens of MB/s.
func hashFor(noVerify bool) pipeline.HashAlg {
	if noVerify {
		return pipeline.HashNone
	}
	return pipeline.HashSHA256
}

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
	if transfer%bs != 0 {
		rounded := max(transfer/bs*bs, bs)
		note = strings.TrimPrefix(note+"; ", "; ") + fmt.Sprintf("transfer size rounded to %s, a whole number of %d-byte blocks", units.FormatSize(rounded), bs)
		transfer = rounded
	}
	return transfer, note
}

// checkBeforeWrite refuses, before anything is written, what can be known
// to fail: a write-protected medium and an image that does not fit.
func checkBeforeWrite(d *device, src *imagesrc.Source) error {
	if err := pipeline.CheckWritable(d.dev, d.name); err != nil {
		return err
	}
	// Only a size the container vouches for refuses: gzip's size trailer
	// of a damaged file can claim anything.
	if err := pipeline.CheckFits(d.dev, d.name, src.Size, src.SizeExact); err != nil {
		return err
	}
	return nil
}

// confirm asks the person at the terminal; without one it refuses, so a
// script never writes to a card it did not name with --yes.
func (a *app) confirm(d *device, image string, src *imagesrc.Source) error {
	if !a.interactive {
		return fmt.Errorf("%w: no terminal to ask whether to overwrite %s", errNotConfirmed, d.name)
	}
	fmt.Fprintf(a.stderr, "Target: %s\n%s\nWrite %s (%s, %s) to it? ALL DATA ON IT WILL BE LOST. [y/N] ",
		d.name, identityLine(d), image, src.Format, describeSize(src))
	if a.answeredYes() {
		return nil
	}
	return &refusedError{fmt.Sprintf("not confirmed: nothing was written to %s", d.name)}
}

// answeredYes reads one line from the person at the terminal: only y or
// yes agrees.
func (a *app) answeredYes() bool {
	answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
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

// progressFunc adapts pipeline progress to the reporter. Done always
// counts image bytes; while a compressed image is written, the bytes of
// the file read so far come along, so a bar can fill even when the image's
// size is unknown.
func progressFunc(rep reporter, src *imagesrc.Source) func(pipeline.Progress) {
	return func(p pipeline.Progress) {
		e := progressEvent{Phase: phase(p.Phase), Done: p.Done, Total: p.Total, ElapsedS: p.Elapsed.Seconds()}
		if p.Elapsed >= rateWarmUp && p.Done > 0 {
			e.Rate = ptr(rate(p.Done, p.Elapsed))
		}
		if src != nil && src.Format != imagesrc.FormatRaw && e.Phase == phaseWrite {
			e.CompressedDone = ptr(src.CompressedRead())
			if src.CompressedSize >= 0 {
				e.CompressedTotal = ptr(src.CompressedSize)
			}
		}
		rep.progress(e)
	}
}

// perGiB is CPU seconds per GiB of image.
func perGiB(cpu time.Duration, bytes int64) float64 {
	if bytes <= 0 {
		return 0
	}
	return cpu.Seconds() / (float64(bytes) / (1 << 30))
}

// cpuLine says what the command cost the host and what memory it sent from.
func cpuLine(cpu time.Duration, bytes int64, memory string) string {
	return fmt.Sprintf("CPU: %.2f s (%.2f s per GiB), buffers in %s memory", cpu.Seconds(), perGiB(cpu, bytes), memory)
}

func boundLine(res pipeline.WriteResult) string {
	switch boundOf(res) {
	case boundDecoder:
		return fmt.Sprintf("Bottleneck: the decoder (busy %.1fx longer than the device; the writer waited %s for data)", res.BoundRatio, res.DecoderWait.Round(time.Millisecond))
	case boundDevice:
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

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
