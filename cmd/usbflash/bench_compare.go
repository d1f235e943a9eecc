package main

import (
	"context"
	"fmt"
	"strings"

	"usbflash/usbms/libusb"
)

// compareNode is the kernel block device --compare reads: the one given as
// file:PATH, or the disk the kernel made for a usb: reader, which sysfs
// shows while usb-storage still has the interface. The sysfs walk itself
// is libusb.KernelDisks (it moves with the rest of the sysfs code); this
// only picks the disk of the target's LUN.
func compareNode(ctx context.Context, t target, spec string) (string, error) {
	if path, ok := strings.CutPrefix(spec, "file:"); ok {
		if path == "" {
			return "", &usageError{"--compare=file: needs a path, like --compare=file:/dev/sdb"}
		}
		return path, nil
	}
	if t.kind != targetUSB {
		return "", &usageError{fmt.Sprintf("--compare alone finds the kernel's disk of a usb: reader; %s is not one: give --compare=file:PATH", t.raw)}
	}
	info, err := findUSB(ctx, t)
	if err != nil {
		return "", err
	}
	disks, err := libusb.KernelDisks(info)
	if err != nil {
		return "", &codedError{exitDevice, fmt.Errorf("--compare: %s: %w", t.raw, err)}
	}
	var match []libusb.KernelDisk
	for _, d := range disks {
		if t.lun < 0 || d.LUN == t.lun {
			match = append(match, d)
		}
	}
	switch {
	case len(match) == 0:
		return "", &usageError{fmt.Sprintf("--compare: the kernel has no disk for %s (usb-storage is not bound to it, or it was already taken): give --compare=file:/dev/sdX", t.raw)}
	case len(match) > 1:
		var nodes []string
		for _, d := range match {
			nodes = append(nodes, fmt.Sprintf("%s (LUN %d)", d.Node, d.LUN))
		}
		return "", &usageError{fmt.Sprintf("--compare: %s has several kernel disks (%s): add /LUN to the target", t.raw, strings.Join(nodes, ", "))}
	case match[0].Size == 0:
		return "", &usageError{fmt.Sprintf("--compare: %s has no medium in the kernel's view", match[0].Node)}
	}
	return match[0].Node, nil
}
