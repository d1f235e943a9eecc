package libusb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// KernelDisk is a block device the kernel's usb-storage (or uas) driver made
// from a USB interface, as sysfs shows it. `usbflash list` shows these so the
// user can tell readers apart without claiming anything.
type KernelDisk struct {
	Name       string   // kernel name, "sdb"
	Node       string   // "/dev/sdb"
	HCTL       string   // SCSI address host:channel:target:lun, "6:0:0:0"
	LUN        int      // the L of HCTL
	Size       int64    // bytes; 0 when no medium is inserted
	Vendor     string   // SCSI INQUIRY vendor, trimmed
	Model      string   // SCSI INQUIRY product, trimmed
	Partitions []string // partition nodes, "/dev/sdb1", ...
	InUse      []Use    // why the disk is busy; empty when it is free
}

// Use is one reason a kernel block device must not be pulled away.
type Use struct {
	Node       string // the busy device: "/dev/sdb1", or "/dev/dm-0" for a holder
	Of         string // the disk or partition it belongs to ("/dev/sdb1")
	MountPoint string // mount point; "[swap]" for active swap; empty when only held
	FSType     string
}

func (u Use) String() string { return describeUse(u) }

// sysView is where the in-use check looks. Tests point it at a fake tree.
type sysView struct {
	sysRoot   string // normally /sys
	mountInfo string // normally /proc/self/mountinfo
	swaps     string // normally /proc/swaps
}

func hostView() sysView {
	return sysView{sysRoot: "/sys", mountInfo: "/proc/self/mountinfo", swaps: "/proc/swaps"}
}

// KernelDisks returns the block devices the kernel created from info's
// interface, with their partitions and whatever mounts or holds them. It
// claims nothing. An interface without a kernel driver (or a system without
// sysfs) has none: the result is empty and the error nil.
func KernelDisks(info Info) ([]KernelDisk, error) {
	return hostView().disks(info)
}

// disks walks <sysfs>/bus/usb/devices/<port>:<config>.<iface>/host*/target*/
// H:C:T:L/block/<name>, the layout usb-storage and uas create (scsi_host,
// then scsi_target, then scsi_device, then its disk).
func (v sysView) disks(info Info) ([]KernelDisk, error) {
	if info.PortPath == "" {
		return nil, nil
	}
	ifDir := filepath.Join(v.sysRoot, "bus", "usb", "devices", info.sysfsName())
	if _, err := os.Stat(ifDir); err != nil {
		return nil, nil // no such interface in sysfs: no kernel disk to protect
	}
	blockDirs, err := filepath.Glob(filepath.Join(ifDir, "host*", "target*", "*", "block", "*"))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ifDir, err)
	}
	if len(blockDirs) == 0 {
		return nil, nil
	}
	mounts, err := parseMountInfo(v.mountInfo)
	if err != nil {
		return nil, fmt.Errorf("reading the mount table %s: %w", v.mountInfo, err)
	}
	swaps, err := parseSwaps(v.swaps)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", v.swaps, err)
	}
	var out []KernelDisk
	for _, dir := range blockDirs {
		out = append(out, v.disk(dir, mounts, swaps))
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].LUN != out[b].LUN {
			return out[a].LUN < out[b].LUN
		}
		return out[a].Name < out[b].Name
	})
	return out, nil
}

// disk reads one disk directory (…/H:C:T:L/block/sdb).
func (v sysView) disk(dir string, mounts []mountEntry, swaps []string) KernelDisk {
	name := filepath.Base(dir)
	lunDir := filepath.Dir(filepath.Dir(dir))
	d := KernelDisk{
		Name:   name,
		Node:   "/dev/" + name,
		HCTL:   filepath.Base(lunDir),
		LUN:    lunOf(filepath.Base(lunDir)),
		Size:   sectors(filepath.Join(dir, "size")),
		Vendor: readAttr(filepath.Join(lunDir, "vendor")),
		Model:  readAttr(filepath.Join(lunDir, "model")),
	}
	d.InUse = append(d.InUse, usesOf(dir, name, "/dev/"+name, mounts, swaps, 0)...)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		part := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(part, "partition")); err != nil {
			continue
		}
		d.Partitions = append(d.Partitions, "/dev/"+e.Name())
		d.InUse = append(d.InUse, usesOf(part, e.Name(), "/dev/"+e.Name(), mounts, swaps, 0)...)
	}
	return d
}

// maxHolderDepth bounds the walk through stacked holders (LVM on dm-crypt
// on a partition is three deep); sysfs has no cycles, this is a seat belt.
const maxHolderDepth = 4

// usesOf lists the mounts and swaps of the block device in dir, then walks
// its holders (dm, md) recursively: a mounted LUKS volume on sdb1 shows up
// as dm-0 mounted, held on /dev/sdb1. of is the node reported as the owner.
func usesOf(dir, name, of string, mounts []mountEntry, swaps []string, depth int) []Use {
	var uses []Use
	dev := readAttr(filepath.Join(dir, "dev"))
	for _, m := range mounts {
		if (dev != "" && m.dev == dev) || sameBlockDev(m.source, name) {
			uses = append(uses, Use{Node: "/dev/" + name, Of: of, MountPoint: m.mountPoint, FSType: m.fsType})
		}
	}
	for _, s := range swaps {
		if sameBlockDev(s, name) {
			uses = append(uses, Use{Node: "/dev/" + name, Of: of, MountPoint: "[swap]", FSType: "swap"})
		}
	}
	if depth >= maxHolderDepth {
		return uses
	}
	holders, _ := os.ReadDir(filepath.Join(dir, "holders"))
	for _, h := range holders {
		hdir := filepath.Join(dir, "holders", h.Name())
		sub := usesOf(hdir, h.Name(), of, mounts, swaps, depth+1)
		if len(sub) == 0 {
			// Held but not mounted (an open LUKS mapping, an md member):
			// still in use by the kernel.
			sub = []Use{{Node: "/dev/" + h.Name(), Of: of}}
		}
		uses = append(uses, sub...)
	}
	return uses
}

// checkNotInUse refuses (with ErrMounted) when any kernel disk behind info
// is mounted, swapped on or held.
func (v sysView) checkNotInUse(info Info) error {
	disks, err := v.disks(info)
	if err != nil {
		return &Error{Op: "checking whether the device's disk is mounted", Device: info.String(), Err: err,
			Hint: "pass --force to skip this check if you are sure nothing uses the disk"}
	}
	var reasons []string
	for _, d := range disks {
		for _, u := range d.InUse {
			reasons = append(reasons, describeUse(u))
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return &Error{Op: "refusing to take the device from the kernel", Device: info.String(), Kind: ErrMounted,
		Hint: strings.Join(reasons, "; ") + "; unmount it first, or pass --force to take it anyway"}
}

// readAttr reads a sysfs attribute, trimmed; missing or unreadable is "".
func readAttr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sectors reads a sysfs "size" attribute: always in 512-byte units,
// whatever the device's logical block size (block/genhd.c).
func sectors(path string) int64 {
	n, err := strconv.ParseInt(readAttr(path), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n * 512
}

// lunOf takes the L of an H:C:T:L name; -1 when the name is not one.
func lunOf(hctl string) int {
	f := strings.Split(hctl, ":")
	if len(f) != 4 {
		return -1
	}
	n, err := strconv.Atoi(f[3])
	if err != nil {
		return -1
	}
	return n
}

// sysfsString reads a device's cached string descriptor from sysfs
// (manufacturer, product, serial): the kernel read it at enumeration, so no
// permission on the device node is needed.
func (v sysView) sysfsString(portPath, attr string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(v.sysRoot, "bus", "usb", "devices", portPath, attr))
	if err != nil {
		return "", errors.Is(err, fs.ErrNotExist) && v.hasDevice(portPath)
	}
	return strings.TrimRight(string(b), "\n"), true
}

// hasDevice tells whether sysfs knows the device at all; a device that is
// there but lacks e.g. "serial" simply has no such string.
func (v sysView) hasDevice(portPath string) bool {
	_, err := os.Stat(filepath.Join(v.sysRoot, "bus", "usb", "devices", portPath, "idVendor"))
	return err == nil
}
