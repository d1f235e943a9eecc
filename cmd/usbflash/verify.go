package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/blockdev"
	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/flash"
	"github.com/usbflash/usbflash/imagesrc"
	"github.com/usbflash/usbflash/internal/units"
	"github.com/usbflash/usbflash/pipeline"
)

func newVerifyCommand(a *app) *cobra.Command {
	var (
		transferSize  string
		asJSON, quiet bool
		bmapPath      string
		noBmap        bool
	)
	c := &cobra.Command{
		Use:   "verify IMAGE TARGET",
		Short: "Read a card back and compare it with an image",
		Long: `Decode IMAGE and compare it byte for byte with what TARGET reads back,
reporting the first differing LBA. Nothing is written. With a block map
(--bmap, or IMAGE.bmap beside the image, as write finds it) only the
mapped ranges are compared: a write with the map left the rest of the card
as it was.

The buffers take a few transfer sizes of memory, at most ` + units.FormatSize(pipeline.MaxBufferMemory) + `.`,
		Args:              exactArgs(2, "IMAGE and TARGET"),
		ValidArgsFunction: targetArgs(true),
		RunE: func(c *cobra.Command, args []string) error {
			rep := a.reporterFor(asJSON, quiet)
			return a.reported(rep, func() error {
				buffers := 2 // what a verify reads with
				transfer, err := parseTransfer(transferSize, &buffers)
				if err != nil {
					return err
				}
				t, err := drive.Parse(args[1])
				if err != nil {
					return err
				}
				return a.verify(c.Context(), rep, args[0], t, transfer, flash.BlockMapChoice{Path: bmapPath, Off: noBmap})
			})
		},
	}
	addTransferFlag(c, &transferSize, pipeline.DefaultReadSize, "bytes per READ command")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line on stdout (start, device, phase, progress, note, summary, error)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only errors; with --json, only the summary or error event")
	c.Flags().StringVar(&bmapPath, "bmap", "", "compare only the ranges this bmaptool block map lists (default: IMAGE.bmap next to the image, as write finds it)")
	c.Flags().BoolVar(&noBmap, "no-bmap", false, "compare every byte even when a block map lies next to the image")
	return c
}

func (a *app) verify(ctx context.Context, rep reporter, image string, t drive.Spec, transfer int64, maps flash.BlockMapChoice) error {
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
	m, mapPath, err := flash.FindBlockMap(image, src, maps)
	if err != nil {
		return err
	}
	var only []blockdev.Extent
	if m != nil {
		only = m.Extents()
		presentBlockMap(rep, flash.BlockMapChosen{Path: mapPath, Ranges: len(m.Ranges), MappedBytes: m.MappedBytes(), ImageSize: m.ImageSize})
	}
	readers, err := a.newReaders()
	if err != nil {
		return err
	}
	d, err := drive.Open(ctx, t, drive.Options{ReadOnly: true, OnNotice: noticeNotes(rep), Readers: readers})
	if err != nil {
		return err
	}
	defer d.Close()
	transfer = openedDevice(rep, d, transfer)
	if err := pipeline.CheckFits(d.Dev, d.Name, src.Size, src.SizeExact); err != nil {
		return &codedError{exitVerify, fmt.Errorf("%w: it cannot match", err)}
	}
	res, err := pipeline.Verify(ctx, d.Dev, src, expectedSize(src), pipeline.VerifyOptions{
		Name: d.Name, TransferSize: int(transfer), Progress: progressFunc(rep, nil), Only: only,
	})
	if err != nil {
		return &compareError{err}
	}
	rep.event(&summaryEvent{
		eventHeader: eventHeader{Event: evSummary}, Command: cmdVerify,
		Bytes: res.Bytes, ElapsedS: res.Elapsed.Seconds(), Rate: rate(res.Bytes, res.Elapsed), Verified: true,
		Memory: res.Memory, CPUS: res.CPU.Seconds(), CPUPerGiB: perGiB(res.CPU, res.Bytes),
	}, fmt.Sprintf("%s matches %s: %s compared in %s (%s)\n%s", d.Name, image, units.FormatBytes(res.Bytes),
		res.Elapsed.Round(time.Millisecond), units.FormatRate(rate(res.Bytes, res.Elapsed)),
		cpuLine(res.CPU, res.Bytes, res.Memory)))
	return nil
}

// compareError is a verify command's failure: a difference means the card
// holds something other than this image, which need not be the card's
// fault (it may hold another image, or an older write).
type compareError struct{ err error }

func (e *compareError) Error() string { return e.err.Error() }
func (e *compareError) Unwrap() error { return e.err }
