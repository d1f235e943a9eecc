package main

import (
	"context"
	"errors"
	"strings"

	"usbflash/blockdev"
	"usbflash/imagesrc"
	"usbflash/pipeline"
	"usbflash/scsi"
	"usbflash/usbms"
	"usbflash/usbms/libusb"
)

// classifyDomainError sorts the pipeline's and the devices' typed errors
// into exit codes.
func classifyDomainError(err error) int {
	var (
		src      *imagesrc.Error
		size     *pipeline.ImageSizeError
		capacity *pipeline.CapacityError
		verify   *pipeline.VerifyError
		device   *pipeline.DeviceError
	)
	switch {
	case errors.As(err, &verify):
		return exitVerify
	case errors.As(err, &capacity):
		// Also when the size was only found out by writing to the end
		// of the card: the image does not fit, nothing failed.
		return exitRefused
	case errors.As(err, &src), errors.As(err, &size):
		return exitSource
	case errors.Is(err, errNotConfirmed), errors.Is(err, blockdev.ErrWriteProtected):
		return exitRefused
	case errors.As(err, &device):
		return exitDevice
	}
	var (
		sense   *scsi.SenseError
		command *usbms.CommandError
		usbErr  *libusb.Error
	)
	switch {
	case errors.As(err, &sense), errors.As(err, &command), errors.As(err, &usbErr),
		errors.Is(err, usbms.ErrNoDevice), errors.Is(err, usbms.ErrStall),
		errors.Is(err, usbms.ErrInvalidCSW), errors.Is(err, usbms.ErrPhaseError),
		errors.Is(err, usbms.ErrRecoveryFailed),
		errors.Is(err, libusb.ErrNoUSBSupport), errors.Is(err, libusb.ErrNoUSBAccess):
		// The reader, the card or the USB stack: not our bug.
		return exitDevice
	}
	return exitInternal
}

// errNotConfirmed is a write nobody confirmed.
var errNotConfirmed = errors.New("not confirmed")

// explain is what a person reads of err: the facts, each once, and one
// piece of advice ("" when there is none worth giving).
func explain(err error) (msg, advice string) {
	msg = err.Error()
	// A failed block command is described by the pipeline (operation,
	// target, LBA range, byte offset) and again by the LUN under it:
	// keep the pipeline's words and the LUN's cause.
	var (
		dev *pipeline.DeviceError
		cmd *usbms.CommandError
	)
	if errors.As(err, &dev) && errors.As(dev.Err, &cmd) && cmd.Err != nil {
		msg = strings.Replace(msg, cmd.Error(), cmd.Err.Error(), 1)
	}
	// Go's "context canceled" means nothing to a person who pressed
	// Ctrl-C; the pipeline's CancelledError already says it in words.
	var cancelled *pipeline.CancelledError
	if errors.Is(err, context.Canceled) && !errors.As(err, &cancelled) {
		msg = strings.TrimSuffix(msg, ": "+context.Canceled.Error()) + ": cancelled"
	}
	return msg, hint(err)
}

// hint is the one place that turns an error's kind into advice: library
// errors state facts only, so each message carries one piece of advice.
// (libusb.Error and imagesrc.Error are the exceptions: their advice is
// still part of their text, a mount refusal's naming the mounts, so they
// get nothing more here.)
func hint(err error) string {
	var (
		cancelled *pipeline.CancelledError
		capacity  *pipeline.CapacityError
		verify    *pipeline.VerifyError
		imageSize *pipeline.ImageSizeError
		src       *imagesrc.Error
		device    *pipeline.DeviceError
		usbErr    *libusb.Error
	)
	switch {
	case errors.As(err, &cancelled):
		if cancelled.Phase == pipeline.PhaseWrite && (cancelled.Bytes > 0 || cancelled.LBA > 0) {
			return "run the write again"
		}
		return ""
	case errors.Is(err, context.Canceled):
		return ""
	case errors.As(err, &usbErr) && usbErr.Hint != "":
		return "" // the USB layer's own advice is already in the message
	case errors.Is(err, errNotConfirmed):
		return "pass --yes to write without being asked"
	case errors.Is(err, blockdev.ErrWriteProtected):
		return "slide the card's lock switch to unlock it, or use another card"
	case errors.As(err, &capacity):
		return "use a larger card"
	case errors.As(err, &verify):
		return "write the image again; if the difference stays, the card is failing or fake: use another card"
	case errors.As(err, &src):
		return "" // imagesrc.Error still carries its advice in its text
	case errors.As(err, &imageSize):
		return "download the image again and compare its checksum"
	case errors.Is(err, usbms.ErrNoDevice):
		return "reconnect the reader and run the command again"
	case errors.Is(err, usbms.ErrMediumChanged), scsi.IsMediumSwap(err):
		return "insert the card again and write the whole image again"
	case errors.Is(err, usbms.ErrRecoveryFailed):
		return "unplug the reader, plug it in again, and run the command again"
	case errors.As(err, &device) && device.Op == "sync":
		return "check that the card is still inserted, then write again"
	case scsi.IsMediumError(err):
		return "use another card"
	case errors.As(err, &device):
		return "check that the card is inserted and the reader connected, then run the command again"
	}
	return ""
}

// sourceError classifies an error from opening the image, which already
// names it.
func sourceError(err error) error {
	var src *imagesrc.Error
	if errors.As(err, &src) {
		return err
	}
	return &codedError{exitSource, err}
}
