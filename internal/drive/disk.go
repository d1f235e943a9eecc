package drive

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/diskutil"
	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/internal/lib/windisk"
)

// WholeDisk is a whole disk as the system describes it: what `list` shows of
// a disk: target and what opening one judges it by. Each system's
// description becomes one (diskFromMac, diskFromWindows, diskFromLinux),
// and one decision (judgeDisk) refuses what may not be written.
type WholeDisk struct {
	Target    string // the disk: target that names it: disk:/dev/rdisk4
	Node      string // /dev/rdisk4, \\.\PhysicalDrive2, /dev/sdb
	Name      string // the vendor's and model's names, or the medium's
	Bus       string // "USB", "SD", "Secure Digital", "SATA", "NVMe"...
	Size      int64  // bytes; 0 without a medium
	BlockSize int    // bytes; 0 when the description does not say
	Whole     bool   // a whole disk, not a partition
	// Internal: a fixed disk inside the computer (macOS's Internal, a
	// SATA or NVMe bus); Removable: its medium comes out (a card
	// slot), which makes an internal card reader a writable one.
	Internal  bool
	Removable bool
	// System: the running system's volume lives on it (macOS's boot
	// disk and its APFS container's store, the Windows directory's
	// drive, the root filesystem's disk).
	System bool
	// Volumes are the volumes on it that the system has mounted.
	Volumes []Volume
}

// Volume is a mounted volume of a disk.
type Volume struct {
	Node       string // /dev/disk4s1, \\?\Volume{...}\, /dev/sdb1
	MountPoint string // /Volumes/bootfs, E:\, /media/pi/bootfs; "" when it has none
}

// Listed says whether `list` shows the disk as a disk: target: a whole
// disk a person plugs in or inserts (external, or a removable medium in
// an internal slot), not the system's.
func (d WholeDisk) Listed() bool { return d.Whole && !d.System && (!d.Internal || d.Removable) }

// RawDisk is a disk: target: the disk as the system described it when it
// was opened.
type RawDisk interface {
	RawDisk() WholeDisk
}

// ListDisks lists the disks `list` shows as disk: targets (Listed), by
// node. A system without disk: targets has none.
func ListDisks(ctx context.Context) ([]WholeDisk, error) {
	all, err := listDisks(ctx)
	if err != nil {
		return nil, err
	}
	var out []WholeDisk
	for _, d := range all {
		if d.Listed() {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(a, b int) bool { return lessNode(out[a].Node, out[b].Node) })
	return out, nil
}

// lessNode orders nodes as a person counts them: disk4 before disk10.
func lessNode(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// judgeDisk is the one decision on a disk: target every system's open
// makes before it takes anything from the system: a partition is no
// target, the system's disk is never written, an internal fixed disk
// only when forced, and the disk the image lies on not while it is read.
// Mounted volumes are for the system's open to deal with: Linux refuses
// them (unless forced), macOS and Windows unmount them, refusing when a
// program holds one.
func judgeDisk(t Spec, d WholeDisk, opts Options) error {
	if !d.Whole {
		return usageKind(t.Raw, ErrNotWholeDisk, fmt.Sprintf("target %s is a partition, not a whole disk", t.Raw))
	}
	if opts.ReadOnly {
		return nil
	}
	switch {
	case d.System:
		return &Error{class: failure.Refused, Target: t.Raw, Err: ErrSystemDisk,
			Msg: fmt.Sprintf("target %s (%s) holds the running system's volume; nothing was written", t.Raw, describeDisk(d))}
	case d.Internal && !d.Removable && !opts.Force:
		return &Error{class: failure.Refused, Target: t.Raw, Err: ErrInternalDisk,
			Msg: fmt.Sprintf("target %s (%s) is an internal disk, not a card or stick; nothing was written", t.Raw, describeDisk(d))}
	}
	return imageOnVolumes(opts.Image, t, d.Volumes)
}

// describeDisk names a disk in a message: its name, bus and size.
func describeDisk(d WholeDisk) string {
	var parts []string
	if d.Name != "" {
		parts = append(parts, d.Name)
	}
	if d.Bus != "" {
		parts = append(parts, d.Bus)
	}
	if d.Size > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes", d.Size))
	}
	return strings.Join(parts, ", ")
}

// imageOnVolumes refuses target t when the image lies on one of its
// volumes: unmounting them would pull the image from under its reader.
func imageOnVolumes(image string, t Spec, vols []Volume) error {
	if image == "" || image == "-" {
		return nil
	}
	img, err := filepath.Abs(image)
	if err != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(img); err == nil {
		img = real
	}
	for _, v := range vols {
		if v.MountPoint == "" {
			continue
		}
		if rel, err := filepath.Rel(v.MountPoint, img); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return refuseImage(t, fmt.Sprintf("holds the volume %s the image %s lies on", v.MountPoint, image))
		}
	}
	return nil
}

// unknownUse is the refusal of a disk whose use could not be read.
func unknownUse(t Spec, err error) error {
	return &Error{class: failure.Refused, Target: t.Raw, Err: fmt.Errorf("%w: %w", ErrInUseUnknown, err),
		Msg: fmt.Sprintf("target %s: %v: %v; nothing was written", t.Raw, ErrInUseUnknown, err)}
}

// notADisk is the refusal of a disk: target that names no disk.
func notADisk(t Spec, what string) error {
	return usageKind(t.Raw, ErrNotADisk, fmt.Sprintf("target %s %s", t.Raw, what))
}

// diskFromMac is a macOS disk from diskutil: info is the disk's, boot the
// whole disks the system boots from (diskutil.BootDisks), list every
// disk's volumes (diskutil list -plist).
func diskFromMac(info diskutil.Info, boot []string, list diskutil.List) WholeDisk {
	id := info.DeviceIdentifier
	d := WholeDisk{
		Node: "/dev/r" + id, Name: info.MediaName, Bus: info.BusProtocol, Size: info.Bytes(), BlockSize: info.DeviceBlockSize,
		Whole: info.WholeDisk, Internal: info.Internal, Removable: info.RemovableMedia,
		System: info.OSInternalMedia || slices.Contains(boot, diskutil.WholeDiskOf(id)),
	}
	if d.Name == "" {
		d.Name = strings.TrimSuffix(info.IORegistryEntryName, " Media")
	}
	d.Target = "disk:" + d.Node
	for _, p := range list.Mounted(diskutil.WholeDiskOf(id)) {
		d.Volumes = append(d.Volumes, Volume{Node: "/dev/" + p.DeviceIdentifier, MountPoint: p.MountPoint})
	}
	return d
}

// diskFromWindows is a Windows drive from its IOCTLs: vols are every
// volume, system the drives of the Windows directory's volume.
func diskFromWindows(drv windisk.Drive, vols []windisk.Volume, system []uint32) WholeDisk {
	d := WholeDisk{
		Target: "disk:" + drv.Path, Node: drv.Path, Name: drv.Descriptor.Name(), Bus: drv.Descriptor.Bus.String(),
		Size: drv.Geometry.Size, BlockSize: int(drv.Geometry.BytesPerSector), Whole: true,
		Internal:  !drv.Descriptor.Bus.External(),
		Removable: drv.Descriptor.Removable || drv.Geometry.RemovableMedia,
		System:    slices.Contains(system, drv.Number),
	}
	for _, v := range vols {
		if v.On(drv.Number) {
			d.Volumes = append(d.Volumes, Volume{Node: v.Name, MountPoint: strings.Join(v.Paths, ", ")})
		}
	}
	return d
}

// diskFromLinux is a Linux disk from sysfs. Linux says "internal" of no
// disk: one is internal unless its medium comes out or it is on USB or an
// SD host (where cards and sticks are), or is a loop device (a file the
// user attached): a SATA, NVMe or virtio disk is written only when forced.
func diskFromLinux(w linuxdisk.WholeDisk) WholeDisk {
	d := WholeDisk{
		Target: "disk:" + w.Node, Node: w.Node, Name: strings.Join(strings.Fields(w.Vendor+" "+w.Model), " "), Bus: w.Bus,
		Size: w.Size, Whole: true, Removable: w.Removable, System: w.System,
		Internal: !w.Removable && w.Bus != "USB" && w.Bus != "SD" && w.Bus != "loop",
	}
	for _, u := range w.InUse {
		if u.Kind == linuxdisk.Mounted {
			d.Volumes = append(d.Volumes, Volume{Node: u.Node, MountPoint: u.MountPoint})
		}
	}
	return d
}
