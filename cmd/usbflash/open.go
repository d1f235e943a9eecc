package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"usbflash/blockdev"
	"usbflash/filedev"
	"usbflash/internal/flock"
	"usbflash/internal/linuxdisk"
	"usbflash/usbms"
	"usbflash/usbms/libusb"
	"usbflash/usbms/sim"
)

// openOptions are the safety choices the user made on the command line.
type openOptions struct {
	force bool // take a disk the system uses (mounted, swap, held)
	// newFileSize is the size a file: target that does not exist yet is
	// created with when the target gives none: the image's size in whole
	// blocks. 0: a missing file is an error.
	newFileSize int64
	// readOnly: the command only reads the target (verify, info).
	readOnly bool
	// allowNoMedium: an empty slot is opened for its identity alone
	// (info); device.lun is then nil and device.empty describes the slot.
	allowNoMedium bool
	// image is the image the command writes; the target must not be it,
	// nor the disk it lies on. "" when there is none.
	image string
	// onRecovery is told each step of a reader's recovery ladder.
	onRecovery func(step string)
}

// device is one opened target, ready for block I/O: a LUN of a real or
// simulated reader, or a file. It knows how to describe itself to the user.
type device struct {
	name string // the target, as messages name it
	dev  blockdev.Device

	lun    *usbms.LUN // nil for file: and for an empty slot
	empty  *usbms.LUNSummary
	usb    *libusb.Info
	file   *filedev.Device
	closer func() error
	// created is the file this run created for the target ("" when it
	// existed): Close removes it unless the write began (markWritten), so
	// a refused write leaves nothing behind.
	created string
	written bool
}

// markWritten records that writing began: the target is kept from now on.
func (d *device) markWritten() { d.written = true }

func (d *device) Close() error {
	var err error
	if d.closer != nil {
		err = d.closer()
	}
	if d.created != "" && !d.written {
		if rerr := os.Remove(d.created); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// capacity is the medium's size in bytes.
func (d *device) capacity() int64 {
	if d.dev == nil {
		return 0
	}
	return d.dev.BlockCount() * int64(d.dev.BlockSize())
}

// openTarget opens t for block I/O. Nothing is written; for usb: targets
// the interface is claimed (and the kernel driver detached) only here, after
// the in-use check.
func openTarget(ctx context.Context, t target, opts openOptions) (*device, error) {
	if t.kind == targetUSB {
		info, err := findUSB(ctx, t)
		if err != nil {
			return nil, err
		}
		// Before the claim, which takes the disk from under the image.
		if err := sameFileAsImage(opts.image, t, &info); err != nil {
			return nil, err
		}
		ud, err := libusb.Open(ctx, info, libusb.OpenOptions{Force: opts.force})
		if err != nil {
			return nil, targetOpenError(t, err)
		}
		return openLUN(ctx, t, usbName(info), ud, &info, ud.Close, opts)
	}
	if err := sameFileAsImage(opts.image, t, nil); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(t.path)
	missing := errors.Is(statErr, fs.ErrNotExist)
	d, err := openPath(ctx, t, opts, missing)
	if err != nil {
		if missing {
			os.Remove(t.path) // this run created it and was refused: leave nothing
		}
		return nil, err
	}
	if missing {
		d.created = t.path
	}
	return d, nil
}

// openPath opens a file: or sim: target, which lives in a file at t.path.
func openPath(ctx context.Context, t target, opts openOptions, missing bool) (*device, error) {
	if t.kind == targetFile {
		return openFile(t, opts, missing)
	}
	open := sim.Open
	if opts.readOnly {
		open = sim.OpenReadOnly
	}
	sd, err := open(t.spec)
	if err != nil {
		return nil, targetOpenError(t, err)
	}
	return openLUN(ctx, t, "sim:"+t.path, sd, nil, sd.Close, opts)
}

func openFile(t target, opts openOptions, missing bool) (*device, error) {
	size := t.fileSize
	if size == 0 && missing && !opts.readOnly {
		size = opts.newFileSize
		if size == 0 {
			return nil, &usageError{fmt.Sprintf("target %s does not exist and the image's size is not known in advance: give one, as in file:%s?size=8GiB", t.raw, t.path)}
		}
	}
	f, err := filedev.Open(t.path, filedev.Options{Force: opts.force, Size: size, ReadOnly: opts.readOnly})
	if err != nil {
		return nil, targetOpenError(t, err)
	}
	return &device{name: "file:" + t.path, dev: f, file: f, closer: f.Close}, nil
}

// targetOpenError sorts why a target could not be opened, in one place for
// every kind of target: the system uses it or another run holds it
// (refused), the target cannot be one (usage), or the device failed.
func targetOpenError(t target, err error) error {
	switch {
	case errors.Is(err, linuxdisk.ErrInUse):
		return &refusedError{fmt.Sprintf("%v: %s first, or pass --force if you are sure; nothing was written", err, inUseAdvice(err))}
	case errors.Is(err, flock.ErrLocked), errors.Is(err, libusb.ErrBusy):
		return &refusedError{fmt.Sprintf("target %s is in use by another usbflash (or another program): wait for it to finish; nothing was written", t.raw)}
	case errors.Is(err, filedev.ErrBadTarget):
		return &usageError{err.Error()}
	case t.kind == targetSim:
		return &usageError{fmt.Sprintf("target %s: %v", t.raw, err)}
	case t.kind == targetFile:
		return &codedError{exitDevice, err}
	}
	return err
}

// inUseAdvice says what frees a disk the system uses, for the uses err
// names.
func inUseAdvice(err error) string {
	var e *linuxdisk.InUseError
	if !errors.As(err, &e) {
		return "close what uses it"
	}
	verbs := map[linuxdisk.UseKind]string{
		linuxdisk.Mounted: "unmount it",
		linuxdisk.Swap:    "swapoff it",
		linuxdisk.Held:    "close the dm-crypt, LVM or RAID device that holds it",
	}
	var advice []string
	for _, u := range e.Uses {
		if v := verbs[u.Kind]; v != "" {
			advice = append(advice, v)
			delete(verbs, u.Kind)
		}
	}
	return strings.Join(advice, " and ")
}

// sameFileAsImage refuses a target that is the image itself (the same
// file through any path, hard link or symlink) or the disk the image lies
// on (a block device, or the kernel's disk of a usb: reader, with its
// partitions): writing would destroy the image while it is read. The image
// "-" is standard input, which may be the target redirected.
func sameFileAsImage(image string, t target, usb *libusb.Info) error {
	if image == "" {
		return nil
	}
	var img fs.FileInfo
	var err error
	if image == "-" {
		img, err = os.Stdin.Stat()
	} else {
		img, err = os.Stat(image)
	}
	if err != nil {
		return nil // the image's own open reports it
	}
	refuse := func(why string) error {
		return &refusedError{fmt.Sprintf("target %s %s: refusing to overwrite the image while reading it; nothing was written", t.raw, why)}
	}
	var devs []string // the target disk and its partitions
	if usb != nil {
		disks, _ := libusb.KernelDisks(*usb)
		for _, d := range disks {
			devs = append(devs, d.Devs...)
		}
	} else {
		tgt, err := os.Stat(t.path)
		if err != nil {
			return nil // a target that does not exist yet is no image
		}
		if os.SameFile(img, tgt) {
			return refuse(fmt.Sprintf("is the image %s", image))
		}
		_, tgtDev, ok := linuxdisk.FileDevs(tgt)
		if !ok || tgt.Mode()&fs.ModeDevice == 0 || tgt.Mode()&fs.ModeCharDevice != 0 {
			return nil
		}
		devs = []string{tgtDev}
		if disk, err := linuxdisk.Host().BlockDevice(tgtDev); err == nil {
			devs = disk.Devs
		}
	}
	imgDev, _, ok := linuxdisk.FileDevs(img)
	for _, d := range devs {
		if ok && d == imgDev {
			return refuse(fmt.Sprintf("holds the filesystem the image %s lies on", image))
		}
	}
	return nil
}

// openLUN runs Bulk-Only Transport over ep and opens the LUN the target
// names. A reader with several LUNs and no /LUN in the target is accepted
// only when exactly one slot has a card.
func openLUN(ctx context.Context, t target, name string, ep usbms.Endpoint, info *libusb.Info, closeEP func() error, opts openOptions) (*device, error) {
	tr := usbms.NewTransport(ep, usbms.TransportOptions{Name: name, OnRecovery: opts.onRecovery})
	return openLUNOn(ctx, t, name, tr, info, closeEP, opts)
}

// openLUNOn opens the LUN t names over a transport that may serve other
// LUNs of the same reader too; closeEP is called when the device closes or
// fails to open.
func openLUNOn(ctx context.Context, t target, name string, tr *usbms.Transport, info *libusb.Info, closeEP func() error, opts openOptions) (*device, error) {
	fail := func(err error) (*device, error) {
		closeEP()
		return nil, err
	}
	var slot usbms.LUNSummary
	if t.lun >= 0 {
		maxLUN, err := tr.MaxLUN(ctx)
		if err != nil {
			return fail(fmt.Errorf("%s: asking for the number of LUNs: %w", name, err))
		}
		if t.lun > maxLUN {
			return fail(&usageError{fmt.Sprintf("%s has LUNs 0 to %d, not %d", name, maxLUN, t.lun)})
		}
		slot = usbms.ProbeLUN(ctx, tr, t.lun, usbms.LUNOptions{})
		if maxLUN > 0 {
			name = fmt.Sprintf("%s/%d", name, t.lun)
		}
	} else {
		slots, err := usbms.ProbeLUNs(ctx, tr, usbms.LUNOptions{})
		if err != nil {
			return fail(err)
		}
		if slot, err = onlyLoadedLUN(t, name, slots); err != nil {
			return fail(err)
		}
		if len(slots) > 1 {
			name = fmt.Sprintf("%s/%d", name, slot.Number)
		}
	}
	d := &device{name: name, usb: info, closer: closeEP}
	switch {
	case slot.LUN != nil:
		d.dev, d.lun = slot.LUN, slot.LUN
	case slot.NoMedium && opts.allowNoMedium:
		d.empty = &slot
	default:
		return fail(slot.Err)
	}
	return d, nil
}

// onlyLoadedLUN picks the slot of a reader the target means without a
// /LUN: the only one, or the single slot that has a card.
func onlyLoadedLUN(t target, name string, slots []usbms.LUNSummary) (usbms.LUNSummary, error) {
	if len(slots) == 1 {
		return slots[0], nil
	}
	var loaded []usbms.LUNSummary
	for _, s := range slots {
		if s.LUN != nil {
			loaded = append(loaded, s)
		}
	}
	if len(loaded) == 1 {
		return loaded[0], nil
	}
	return usbms.LUNSummary{}, &usageError{fmt.Sprintf("%s has %d LUNs (slots), %d with a card: choose one with /LUN (lun=N for sim:), e.g. %s", name, len(slots), len(loaded), withLUN(t, 0))}
}

// withLUN is the target t with slot n chosen, in a form that can be typed
// back in.
func withLUN(t target, n int) string {
	if t.kind == targetSim {
		sep := "?"
		if strings.Contains(t.raw, "?") {
			sep = "&"
		}
		return fmt.Sprintf("%s%slun=%d", t.raw, sep, n)
	}
	return fmt.Sprintf("%s/%d", t.raw, n)
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
