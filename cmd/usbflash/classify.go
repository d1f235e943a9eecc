package main

import (
	"errors"
	"fmt"

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
		capacity *pipeline.CapacityError
		verify   *pipeline.VerifyError
		device   *pipeline.DeviceError
	)
	switch {
	case errors.As(err, &verify):
		return exitVerify
	case errors.As(err, &capacity) && capacity.Written == 0:
		return exitRefused
	case errors.As(err, &src):
		return exitSource
	case errors.As(err, &device), errors.As(err, &capacity):
		return exitDevice
	case scsi.IsWriteProtected(err):
		return exitRefused
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
		errors.Is(err, libusb.ErrNoUSBSupport), errors.Is(err, libusb.ErrNoUSBAccess):
		// The reader, the card or the USB stack: not our bug.
		return exitDevice
	}
	return exitInternal
}

// sourceError names the image in an error from opening it.
func sourceError(image string, err error) error {
	var src *imagesrc.Error
	if errors.As(err, &src) {
		return fmt.Errorf("image %s: %w", image, err)
	}
	return &codedError{exitSource, fmt.Errorf("image %s: %w", image, err)}
}

// writeError keeps the pipeline's error as it is: it already names the
// device, the LBA and what to do.
func writeError(err error) error { return err }
