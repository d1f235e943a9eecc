package main

import (
	"context"
	"fmt"
	"time"

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
reporting the first differing LBA. Nothing is written.`,
		Args: exactArgs(2, "IMAGE and TARGET"),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := parseTarget(args[1])
			if err != nil {
				return err
			}
			transfer, err := units.ParseSize(transferSize)
			if err != nil {
				return &usageError{fmt.Sprintf("--transfer-size: %v", err)}
			}
			return a.verify(c.Context(), args[0], t, transfer, a.reporterFor(asJSON, quiet))
		},
	}
	c.Flags().StringVar(&transferSize, "transfer-size", units.FormatSize(pipeline.DefaultTransferSize), "bytes per READ command")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors")
	return c
}

func (a *app) verify(ctx context.Context, image string, t target, transfer int64, rep reporter) (err error) {
	defer func() {
		if err != nil {
			rep.fail(err, exitCode(err))
			err = &reportedError{err}
		}
	}()
	src, err := imagesrc.Open(image)
	if err != nil {
		return sourceError(image, err)
	}
	defer src.Close()
	d, err := openTarget(ctx, t, openOptions{})
	if err != nil {
		return err
	}
	defer d.Close()
	transfer, _ = fitTransfer(d, transfer)
	if err := pipeline.CheckFits(d.dev, d.name, src.Size, src.SizeExact); err != nil {
		return &codedError{exitVerify, fmt.Errorf("%w: it cannot match", err)}
	}
	res, err := pipeline.Verify(ctx, d.dev, src, expectedSize(src), pipeline.VerifyOptions{
		Name: d.name, TransferSize: int(transfer), Progress: progressFunc(rep, nil),
	})
	if err != nil {
		return writeError(err)
	}
	rep.event("summary", map[string]any{"verified": true, "bytes": res.Bytes, "elapsed_s": res.Elapsed.Seconds()},
		fmt.Sprintf("%s matches %s: %s compared in %s", d.name, image, units.FormatSize(res.Bytes), res.Elapsed.Round(time.Millisecond)))
	return nil
}
