package main

import (
	"context"
	"strings"

	"github.com/usbflash/usbflash/drive"
)

// compareNode is the kernel block device --compare reads: the one given as
// file:PATH, or the disk the kernel made for a usb: reader, which sysfs
// shows while usb-storage still has the interface. The sysfs walk itself
// is drive.KernelDiskNode.
func compareNode(ctx context.Context, usb *drive.Readers, t drive.Spec, spec string) (string, error) {
	if path, ok := strings.CutPrefix(spec, "file:"); ok {
		if path == "" {
			return "", &usageError{"--compare=file: needs a path, like --compare=file:/dev/sdb"}
		}
		return path, nil
	}
	return usb.KernelDiskNode(ctx, t)
}
