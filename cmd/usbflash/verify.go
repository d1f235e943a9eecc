package main

import (
	"context"
	"fmt"
	"time"
	"usbflash/target"

	"github.com/spf13/cobra"

	"usbflash/imagesrc"
	"usbflash/internal/units"
	"usbflash/pipeline"
)

func newVerifyCommand(a *app) *cobra.Command {
	var (
		transferSize  string
		asJSON, quiet bool
	)
	c := &cobra.Command{
		Use:   "verify IMAGE TARGET",
		Short: "Read a card back and compare it with an image",
		Long: `Decode IMAGE and compare it byte for byte with what TARGET reads back,
reporting the first differing LBA. Nothing is written.

The buffers take a few transfer sizes of memory, at most ` + units.FormatSize(pipeline.MaxBufferMemory) + `.`,
		Args:              exactArgs(2, "IMAGE and TARGET"),
		ValidArgsFunction: targetArgs(true),
		RunE: func(c *cobra.Command, args []string) error {
			rep := a.reporterFor(asJSON, quiet)
			return a.reported(rep, func() error {
				transfer, err := parseTransfer(transferSize, pipeline.DefaultBuffers)
				if err != nil {
					return err
				}
				t, err := target.Parse(args[1])
				if err != nil {
					return err
				}
				return a.verify(c.Context(), rep, args[0], t, transfer)
			})
		},
	}
	addTransferFlag(c, &transferSize, "bytes per READ command")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line on stdout (start, device, phase, progress, note, summary, error)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only errors; with --json, only the summary or error event")
	return c
}

func (a *app) verify(ctx context.Context, rep reporter, image string, t target.Spec, transfer int64) error {
	src, err := imagesrc.Open(image)
	if err != nil {
		return sourceError(err)
	}
	defer src.Close()
	rep.event(&startEvent{
		eventHeader: eventHeader{Event: evStart}, Command: cmdVerify,
		Image: image, Format: src.Format.String(), Size: src.Size, SizeExact: src.SizeExact,
		CompressedSize: src.CompressedSize, Target: t.Raw, TransferSize: transfer,
	}, fmt.Sprintf("Comparing %s (%s, %s) with %s ...", image, src.Format, describeSize(src), t.Raw))
	d, err := target.Open(ctx, t, target.Options{ReadOnly: true, OnRecovery: recoveryNotes(rep)})
	if err != nil {
		return err
	}
	defer d.Close()
	transfer = openedDevice(rep, d, transfer)
	if err := pipeline.CheckFits(d.Dev, d.Name, src.Size, src.SizeExact); err != nil {
		return &codedError{exitVerify, fmt.Errorf("%w: it cannot match", err)}
	}
	res, err := pipeline.Verify(ctx, d.Dev, src, expectedSize(src), pipeline.VerifyOptions{
		Name: d.Name, TransferSize: int(transfer), Progress: progressFunc(rep, nil),
	})
	if err != nil {
		return err
	}
	rep.event(&summaryEvent{
		eventHeader: eventHeader{Event: evSummary}, Command: cmdVerify,
		Bytes: res.Bytes, ElapsedS: res.Elapsed.Seconds(), Rate: rate(res.Bytes, res.Elapsed), Verified: true,
		Memory: res.Memory, CPUS: res.CPU.Seconds(), CPUPerGiB: perGiB(res.CPU, res.Bytes),
	}, fmt.Sprintf("%s matches %s: %s compared in %s (%s)\n%s", d.Name, image, formatBytes(res.Bytes),
		res.Elapsed.Round(time.Millisecond), units.FormatRate(rate(res.Bytes, res.Elapsed)),
		cpuLine(res.CPU, res.Bytes, res.Memory)))
	return nil
}
