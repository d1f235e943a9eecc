package drive

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/diskutil"
	"github.com/usbflash/usbflash/pipeline/diskdev"
)

// listDisks lists the physical disks (internal ones too: a Mac's SD slot
// is internal) as diskutil describes each.
func listDisks(ctx context.Context) ([]WholeDisk, error) {
	run := diskutil.Exec
	phys, err := diskutil.Physical(ctx, run)
	if err != nil {
		return nil, err
	}
	all, err := diskutil.All(ctx, run)
	if err != nil {
		return nil, err
	}
	root, err := diskutil.InfoOf(ctx, run, "/")
	if err != nil {
		return nil, err
	}
	boot := diskutil.BootDisks(root)
	var out []WholeDisk
	for _, id := range phys.WholeDisks {
		info, err := diskutil.InfoOf(ctx, run, id)
		if err != nil {
			continue // gone since it was listed
		}
		out = append(out, diskFromMac(info, boot, all))
	}
	return out, nil
}

// openDisk opens a disk: target: diskutil describes it, judgeDisk judges
// it, and for a write its volumes are unmounted (diskutil unmountDisk; a
// program that keeps one is a refusal, unless forced) before its raw node
// is opened.
func openDisk(ctx context.Context, t Spec, opts Options) (*Device, error) {
	run := diskutil.Exec
	id := strings.TrimPrefix(strings.TrimPrefix(t.Path, "/dev/"), "r")
	if diskutil.WholeDiskOf(id) == "" {
		return nil, notADisk(t, "is not a macOS disk (/dev/diskN, /dev/rdiskN or diskN)")
	}
	info, err := diskutil.InfoOf(ctx, run, id)
	if err != nil {
		return nil, &Error{class: failure.Device, Target: t.Raw, Err: errors.Join(ErrNotFound, err),
			Msg: fmt.Sprintf("target %s: %v", t.Raw, err)}
	}
	all, err := diskutil.All(ctx, run)
	var root diskutil.Info
	if err == nil {
		root, err = diskutil.InfoOf(ctx, run, "/")
	}
	if err != nil && !opts.Force && !opts.ReadOnly {
		return nil, unknownUse(t, err)
	}
	d := diskFromMac(info, diskutil.BootDisks(root), all)
	if err := judgeDisk(t, d, opts); err != nil {
		return nil, err
	}
	if !opts.ReadOnly {
		if err := diskutil.UnmountDisk(ctx, run, diskutil.WholeDiskOf(id), opts.Force); err != nil {
			return nil, inUseVolumes(t, err)
		}
	}
	dd, err := diskdev.Open(ctx, d.Node, diskdev.Options{ReadOnly: opts.ReadOnly})
	if err != nil {
		return nil, openError(t, err)
	}
	return &Device{Name: "disk:" + d.Node, Dev: &rawDisk{Device: dd, disk: d}, closer: dd.Close, node: d.Node}, nil
}
