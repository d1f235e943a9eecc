package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"usbflash/filedev"
	"usbflash/pipeline"
	"usbflash/usbms"
	"usbflash/usbms/libusb"
	"usbflash/usbms/sim"
)

// openOptions are the safety choices the user made on the command line.
type openOptions struct {
	force bool // take a reader whose kernel disk is mounted
	// newFileSize is the size a file: target that does not exist yet is
	// created with when the target gives none: the image's size in whole
	// blocks. 0: a missing file is an error.
	newFileSize int64
	// onRecovery is told each step of a reader's recovery ladder.
	onRecovery func(step string)
}

// device is one opened target, ready for block I/O: a LUN of a real or
// simulated reader, or a file. It knows how to describe itself to the user.
type device struct {
	name string // the target, as messages name it
	dev  pipeline.BlockDevice

	lun    *usbms.LUN // nil for file:
	usb    *libusb.Info
	file   *filedev.Device
	closer func() error
}

func (d *device) Close() error {
	if d.closer == nil {
		return nil
	}
	return d.closer()
}

// capacity is the medium's size in bytes.
func (d *device) capacity() int64 { return d.dev.BlockCount() * int64(d.dev.BlockSize()) }

// openTarget opens t for block I/O. Nothing is written; for usb: targets
// the interface is claimed (and the kernel driver detached) only here, after
// the mounted-disk check.
func openTarget(ctx context.Context, t target, opts openOptions) (*device, error) {
	switch t.kind {
	case targetFile:
		size := t.fileSize
		if _, err := os.Stat(t.path); size == 0 && errors.Is(err, fs.ErrNotExist) {
			size = opts.newFileSize
			if size == 0 {
				return nil, &usageError{fmt.Sprintf("target %s does not exist and the image's size is not known in advance: give one, as in file:%s?size=8GiB", t.raw, t.path)}
			}
		}
		f, err := filedev.Open(t.path, filedev.Options{Force: opts.force, Size: size})
		if err != nil {
			return nil, fileOpenError(t, err)
		}
		return &device{name: "file:" + t.path, dev: f, file: f, closer: f.Close}, nil
	case targetSim:
		d, err := sim.Open(t.spec)
		if err != nil {
			return nil, &usageError{fmt.Sprintf("target %s: %v", t.raw, err)}
		}
		return openLUN(ctx, t, "sim:"+t.path, d, nil, d.Close, opts.onRecovery)
	case targetUSB:
		info, err := findUSB(ctx, t)
		if err != nil {
			return nil, err
		}
		ud, err := libusb.Open(ctx, info, libusb.OpenOptions{Force: opts.force})
		if err != nil {
			if errors.Is(err, libusb.ErrMounted) {
				return nil, &refusedError{err.Error()} // the message says what to do

			}
			return nil, err
		}
		return openLUN(ctx, t, usbName(info), ud, &info, ud.Close, opts.onRecovery)
	}
	return nil, fmt.Errorf("target %q: unknown kind", t.raw)
}

// fileOpenError sorts a file target's failure: mounted partitions are a
// refusal, everything else is a device error.
func fileOpenError(t target, err error) error {
	if errors.Is(err, filedev.ErrMounted) {
		return &refusedError{err.Error()}
	}
	return &codedError{exitDevice, err}
}

// openLUN runs Bulk-Only Transport over ep and opens the LUN the target
// names. A reader with several LUNs and no /LUN in the target is accepted
// only when exactly one slot has a card.
func openLUN(ctx context.Context, t target, name string, ep usbms.Endpoint, info *libusb.Info, closeEP func() error, onRecovery func(string)) (*device, error) {
	fail := func(err error) (*device, error) {
		closeEP()
		return nil, err
	}
	tr := usbms.NewTransport(ep, usbms.TransportOptions{Name: name, OnRecovery: onRecovery})
	maxLUN, err := tr.MaxLUN(ctx)
	if err != nil {
		return fail(fmt.Errorf("%s: asking for the number of LUNs: %w", name, err))
	}
	n := t.lun
	if n > maxLUN {
		return fail(&usageError{fmt.Sprintf("%s has LUNs 0 to %d, not %d", name, maxLUN, n)})
	}
	if n < 0 && maxLUN > 0 {
		lun, err := onlyLoadedLUN(ctx, tr, name, maxLUN)
		if err != nil {
			return fail(err)
		}
		n = lun.Number()
		return &device{name: fmt.Sprintf("%s/%d", name, n), dev: lun, lun: lun, usb: info, closer: closeEP}, nil
	}
	if n < 0 {
		n = 0
	}
	lun, err := usbms.OpenLUN(ctx, tr, n, usbms.LUNOptions{})
	if err != nil {
		return fail(err)
	}
	if maxLUN > 0 {
		name = fmt.Sprintf("%s/%d", name, n)
	}
	return &device{name: name, dev: lun, lun: lun, usb: info, closer: closeEP}, nil
}

// onlyLoadedLUN picks the single slot of a multi-slot reader that has a card.
func onlyLoadedLUN(ctx context.Context, tr *usbms.Transport, name string, maxLUN int) (*usbms.LUN, error) {
	var loaded []*usbms.LUN
	for n := 0; n <= maxLUN; n++ {
		if lun, err := usbms.OpenLUN(ctx, tr, n, usbms.LUNOptions{}); err == nil {
			loaded = append(loaded, lun)
		}
	}
	if len(loaded) == 1 {
		return loaded[0], nil
	}
	return nil, &usageError{fmt.Sprintf("%s has %d LUNs (slots), %d with a card: add /LUN to the target, e.g. %s/0", name, maxLUN+1, len(loaded), name)}
}

func usbName(i libusb.Info) string {
	if i.Serial != "" {
		return fmt.Sprintf("usb:%04x:%04x:%s", i.VID, i.PID, i.Serial)
	}
	return fmt.Sprintf("usb:%d.%d", i.Bus, i.Address)
}

// findUSB finds the one supported reader the target selects.
func findUSB(ctx context.Context, t target) (libusb.Info, error) {
	infos, err := libusb.List(ctx)
	if err != nil {
		return libusb.Info{}, &codedError{exitDevice, fmt.Errorf("target %s: %w", t.raw, err)}
	}
	var match []libusb.Info
	for i, info := range infos {
		switch {
		case t.index >= 0 && i != t.index,
			t.hasBus && (info.Bus != t.bus || info.Address != t.addr),
			t.hasVIDPID && (info.VID != t.vid || info.PID != t.pid),
			t.serial != "" && info.Serial != t.serial:
			continue
		}
		match = append(match, info)
	}
	switch {
	case len(match) == 0:
		return libusb.Info{}, &codedError{exitDevice, fmt.Errorf("target %s: no such reader is attached (%d mass-storage interface(s) found); run 'usbflash list'", t.raw, len(infos))}
	case len(match) > 1:
		var names []string
		for _, m := range match {
			names = append(names, usbName(m))
		}
		return libusb.Info{}, &usageError{fmt.Sprintf("target %s matches %d readers (%s): add the serial (usb:VID:PID:SERIAL) or use usb:BUS.ADDR", t.raw, len(match), strings.Join(names, ", "))}
	case !match[0].Supported:
		return libusb.Info{}, &codedError{exitDevice, fmt.Errorf("target %s (%s): not supported: %s", t.raw, match[0], match[0].Reason)}
	}
	return match[0], nil
}
