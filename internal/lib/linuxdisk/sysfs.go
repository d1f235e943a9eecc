// Package linuxdisk reads what the Linux kernel says about its block
// devices (sysfs, the mount table, /proc/swaps) to answer one question for
// every target: is this disk in use by the system. It also finds the disks
// the kernel made from a USB interface and the strings sysfs caches for a
// USB device. On other systems the files are absent and nothing is found.
package linuxdisk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
)

// Disk is a block device as sysfs shows it: a disk the kernel's
// usb-storage (or uas) driver made from a USB interface, or the block
// device behind a file: target.
type Disk struct {
	Name       string   // kernel name, "sdb"
	Node       string   // "/dev/sdb"
	HCTL       string   // SCSI address host:channel:target:lun, "6:0:0:0"; "" outside SCSI
	LUN        int      // the L of HCTL; -1 outside SCSI
	Size       int64    // bytes; 0 when no medium is inserted
	Vendor     string   // SCSI INQUIRY vendor, trimmed
	Model      string   // SCSI INQUIRY product, trimmed
	Partitions []string // partition nodes, "/dev/sdb1", ...
	// Devs are the device numbers ("major:minor") of the disk and of
	// its partitions, in that order: what st_dev of a file on it is.
	Devs  []string
	InUse []Use // why the disk is busy; empty when it is free
}

// UseKind says how the system uses a block device.
type UseKind int

// The ways a disk is in use.
const (
	Mounted UseKind = iota + 1 // a mounted filesystem
	Swap                       // active swap
	Held                       // held by a dm or md device (LUKS, LVM, RAID)
)

// Use is one reason a block device must not be written or pulled away.
type Use struct {
	Kind       UseKind
	Node       string // the busy device: "/dev/sdb1", or "/dev/dm-0" for a holder
	Of         string // the disk or partition it belongs to ("/dev/sdb1")
	MountPoint string // for Mounted
	FSType     string // for Mounted
}

// String states the use as a fact: "/dev/sdb1 is mounted on /mnt",
// "/dev/loop0 is active swap", "/dev/sdb1 is held by dm-0".
func (u Use) String() string {
	node := u.Node
	if u.Of != "" && u.Of != u.Node {
		node = fmt.Sprintf("%s (on %s)", u.Node, u.Of)
	}
	switch u.Kind {
	case Swap:
		return node + " is active swap"
	case Held:
		return fmt.Sprintf("%s is held by %s", u.Of, filepath.Base(u.Node))
	}
	return fmt.Sprintf("%s is mounted on %s", node, u.MountPoint)
}

// ErrInUse is matched (errors.Is) by every refusal of a disk the system
// uses: an *InUseError, or an exclusive open the kernel refused. It is
// usbflash's one "in use" (drive.ErrInUse names it for callers outside).
var ErrInUse = failure.New(failure.Refused, "disk in use")

// ErrInUseUnknown is matched by the refusal of a disk whose use could not
// be read (no mount table, sysfs unreadable): a fact of its own, not a
// use, so errors.Is(err, ErrInUse) does not hold for it and no use is
// named. It is a refusal as ErrInUse is: nothing was written, and the
// disk is taken only when the user says it is not in use (a forced open).
// usb: and file: targets give the same one (drive.ErrInUseUnknown names
// it for callers outside).
var ErrInUseUnknown = failure.New(failure.Refused, "cannot tell whether the disk is in use")

// InUseError is the refusal of a disk that is mounted, swapped on or held.
type InUseError struct {
	Device string // the target as the user named it
	Uses   []Use
}

func (e *InUseError) Error() string {
	uses := make([]string, len(e.Uses))
	for i, u := range e.Uses {
		uses[i] = u.String()
	}
	return fmt.Sprintf("%s is in use: %s", e.Device, strings.Join(uses, "; "))
}

// Is makes errors.Is(err, ErrInUse) true.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// Class is ErrInUse's: a refusal, nothing was written.
func (e *InUseError) Class() failure.Class { return failure.Refused }

// Sys is where the kernel's view is read. The zero value is not useful:
// use Host, or NewSys for a tree of fixtures.
type Sys struct {
	root      string // normally /sys
	mountInfo string // normally /proc/self/mountinfo
	swaps     string // normally /proc/swaps
}

// Host is this machine's sysfs, mount table and swap list.
func Host() Sys {
	return Sys{root: "/sys", mountInfo: "/proc/self/mountinfo", swaps: "/proc/swaps"}
}

// NewSys reads a copy of sysfs at root, a mountinfo file and a swaps file:
// tests point it at fixtures.
func NewSys(root, mountInfo, swaps string) Sys {
	return Sys{root: root, mountInfo: mountInfo, swaps: swaps}
}

// usage is the mount table and the active swaps, read once per question.
type usage struct {
	mounts []mountEntry
	swaps  []string
}

func (s Sys) usage() (usage, error) {
	mounts, err := parseMountInfo(s.mountInfo)
	if err != nil {
		return usage{}, fmt.Errorf("reading the mount table %s: %w", s.mountInfo, err)
	}
	swaps, err := parseSwaps(s.swaps)
	if err != nil {
		return usage{}, fmt.Errorf("reading %s: %w", s.swaps, err)
	}
	return usage{mounts, swaps}, nil
}

// InterfaceDisks returns the block devices the kernel created from the USB
// interface named iface in sysfs ("1-2.3:1.0"), with their partitions and
// whatever mounts or holds them. An interface without a kernel driver (or a
// system without sysfs) has none: the result is empty and the error nil.
//
// It walks <sysfs>/bus/usb/devices/<iface>/host*/target*/H:C:T:L/block/<name>,
// the layout usb-storage and uas create (scsi_host, then scsi_target, then
// scsi_device, then its disk).
func (s Sys) InterfaceDisks(iface string) ([]Disk, error) {
	ifDir := filepath.Join(s.root, "bus", "usb", "devices", iface)
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
	u, err := s.usage()
	if err != nil {
		return nil, err
	}
	var out []Disk
	for _, dir := range blockDirs {
		d := readDisk(dir, u)
		lunDir := filepath.Dir(filepath.Dir(dir))
		d.HCTL, d.LUN = filepath.Base(lunDir), lunOf(filepath.Base(lunDir))
		d.Vendor, d.Model = readAttr(filepath.Join(lunDir, "vendor")), readAttr(filepath.Join(lunDir, "model"))
		out = append(out, d)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].LUN != out[b].LUN {
			return out[a].LUN < out[b].LUN
		}
		return out[a].Name < out[b].Name
	})
	return out, nil
}

// CheckDisks refuses, with an *InUseError naming device, when one of disks
// (as InterfaceDisks read them) is mounted, swapped on or held. A USB
// backend reads a reader's disks once before its claim, for this check and
// for the caller's own (is the image on them?).
func CheckDisks(device string, disks []Disk) error {
	var uses []Use
	for _, d := range disks {
		uses = append(uses, d.InUse...)
	}
	if len(uses) > 0 {
		return &InUseError{Device: device, Uses: uses}
	}
	return nil
}

// BlockDevice describes the block device with number dev ("major:minor"),
// found through <sysfs>/dev/block. A partition is described on its own,
// with its holders; a whole disk with its partitions.
func (s Sys) BlockDevice(dev string) (Disk, error) {
	link := filepath.Join(s.root, "dev", "block", dev)
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return Disk{}, fmt.Errorf("finding block device %s in sysfs: %w", dev, err)
	}
	u, err := s.usage()
	if err != nil {
		return Disk{}, err
	}
	d := readDisk(dir, u)
	d.LUN = -1
	return d, nil
}

// CheckBlockDevice refuses, with an *InUseError naming node, when the block
// device dev or one of its partitions is mounted, swapped on or held. What
// cannot be read is an error: an unknown state is not a free disk.
func (s Sys) CheckBlockDevice(node, dev string) error {
	d, err := s.BlockDevice(dev)
	if err != nil {
		return err
	}
	if len(d.InUse) > 0 {
		return &InUseError{Device: node, Uses: d.InUse}
	}
	return nil
}

// readDisk reads one block device directory (…/block/sdb) and its
// partitions.
func readDisk(dir string, u usage) Disk {
	name := filepath.Base(dir)
	d := Disk{
		Name: name,
		Node: "/dev/" + name,
		LUN:  -1,
		Size: sectors(filepath.Join(dir, "size")),
	}
	if dev := readAttr(filepath.Join(dir, "dev")); dev != "" {
		d.Devs = append(d.Devs, dev)
	}
	d.InUse = append(d.InUse, usesOf(dir, name, "/dev/"+name, u, 0)...)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		// A partition's directory is named after its disk (sdb1,
		// mmcblk0p1); the disk's other entries (queue, power, holders and
		// twenty more) are not looked into: a stat each, which in an
		// emulated slow host is dear.
		if !strings.HasPrefix(e.Name(), name) || !e.IsDir() {
			continue
		}
		part := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(part, "partition")); err != nil {
			continue
		}
		d.Partitions = append(d.Partitions, "/dev/"+e.Name())
		if dev := readAttr(filepath.Join(part, "dev")); dev != "" {
			d.Devs = append(d.Devs, dev)
		}
		d.InUse = append(d.InUse, usesOf(part, e.Name(), "/dev/"+e.Name(), u, 0)...)
	}
	return d
}

// maxHolderDepth bounds the walk through stacked holders (LVM on dm-crypt
// on a partition is three deep); sysfs has no cycles, this is a seat belt.
const maxHolderDepth = 4

// usesOf lists the mounts and swaps of the block device in dir, then walks
// its holders (dm, md) recursively: a mounted LUKS volume on sdb1 shows up
// as dm-0 mounted, held on /dev/sdb1. of is the node reported as the owner.
func usesOf(dir, name, of string, u usage, depth int) []Use {
	var uses []Use
	dev := readAttr(filepath.Join(dir, "dev"))
	for _, m := range u.mounts {
		if (dev != "" && m.dev == dev) || sameBlockDev(m.source, name) {
			uses = append(uses, Use{Kind: Mounted, Node: "/dev/" + name, Of: of, MountPoint: m.mountPoint, FSType: m.fsType})
		}
	}
	for _, s := range u.swaps {
		if sameBlockDev(s, name) {
			uses = append(uses, Use{Kind: Swap, Node: "/dev/" + name, Of: of})
		}
	}
	if depth >= maxHolderDepth {
		return uses
	}
	holders, _ := os.ReadDir(filepath.Join(dir, "holders"))
	for _, h := range holders {
		hdir := filepath.Join(dir, "holders", h.Name())
		sub := usesOf(hdir, h.Name(), of, u, depth+1)
		if len(sub) == 0 {
			// Held but not mounted (an open LUKS mapping, an md member):
			// still in use by the kernel.
			sub = []Use{{Kind: Held, Node: "/dev/" + h.Name(), Of: of}}
		}
		uses = append(uses, sub...)
	}
	return uses
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

// USBString reads a USB device's cached string descriptor from sysfs
// (manufacturer, product, serial) by its port path ("1-2.3"): the kernel
// read it at enumeration, so no permission on the device node is needed.
// known is false when sysfs does not know the device (ask the device);
// a device sysfs knows but that has no such string gives "", true.
func (s Sys) USBString(portPath, attr string) (value string, known bool) {
	b, err := os.ReadFile(filepath.Join(s.root, "bus", "usb", "devices", portPath, attr))
	if err != nil {
		return "", errors.Is(err, fs.ErrNotExist) && s.hasUSBDevice(portPath)
	}
	return strings.TrimRight(string(b), "\n"), true
}

// hasUSBDevice tells whether sysfs knows the device at all; a device that
// is there but lacks e.g. "serial" simply has no such string.
func (s Sys) hasUSBDevice(portPath string) bool {
	_, err := os.Stat(filepath.Join(s.root, "bus", "usb", "devices", portPath, "idVendor"))
	return err == nil
}

// DevNumber renders a Linux device number (st_dev, st_rdev) as sysfs and
// mountinfo write it: "8:16". The split is glibc's gnu_dev_major and
// gnu_dev_minor, as golang.org/x/sys/unix does it on Linux.
func DevNumber(dev uint64) string {
	major := uint32((dev&0x00000000000fff00)>>8) | uint32((dev&0xfffff00000000000)>>32)
	minor := uint32(dev&0xff) | uint32((dev&0x00000ffffff00000)>>12)
	return strconv.FormatUint(uint64(major), 10) + ":" + strconv.FormatUint(uint64(minor), 10)
}
