package linuxdisk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// WholeDisk is a whole disk as sysfs shows it under /sys/block, with what
// a disk: target is judged by: whether its medium comes out, the bus it
// is on, and whether the running system lives on it.
type WholeDisk struct {
	Disk
	Removable bool   // sysfs "removable": a card reader's slot, a floppy
	Bus       string // "USB", "SD", "NVMe", "SATA", "virtio", "SCSI", "loop"; "" when sysfs does not say
	// System: the root filesystem is mounted from it (from a partition,
	// or from a device that holds one of them).
	System bool
}

// notDisks are the kernel's block devices that are no disk a person
// would write an image to: loop and RAM disks, device-mapper and md
// devices (their disks are listed), network block devices, optical
// drives and floppies.
var notDisks = []string{"loop", "ram", "zram", "dm-", "md", "nbd", "sr", "fd"}

// WholeDisks lists the whole disks of /sys/block, each with its
// partitions and uses, by name.
func (s Sys) WholeDisks() ([]WholeDisk, error) {
	entries, err := os.ReadDir(filepath.Join(s.root, "block"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(s.root, "block"), err)
	}
	u, err := s.usage()
	if err != nil {
		return nil, err
	}
	var out []WholeDisk
	for _, e := range entries {
		if isNotDisk(e.Name()) {
			continue
		}
		dir, err := filepath.EvalSymlinks(filepath.Join(s.root, "block", e.Name()))
		if err != nil {
			continue
		}
		out = append(out, s.wholeDisk(dir, u))
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

func isNotDisk(name string) bool {
	for _, p := range notDisks {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// PartitionError is a block device that is a partition where a whole disk
// was asked for.
type PartitionError struct {
	Node string // "/dev/sdb1"
	Disk string // its disk, "/dev/sdb"
}

func (e *PartitionError) Error() string {
	return fmt.Sprintf("%s is a partition of %s, not a whole disk", e.Node, e.Disk)
}

// DescribeWhole describes the block device with number dev
// ("major:minor") as a whole disk; a partition is a *PartitionError
// naming its disk.
func (s Sys) DescribeWhole(node, dev string) (WholeDisk, error) {
	dir, err := filepath.EvalSymlinks(filepath.Join(s.root, "dev", "block", dev))
	if err != nil {
		return WholeDisk{}, fmt.Errorf("finding block device %s in sysfs: %w", dev, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		return WholeDisk{}, &PartitionError{Node: node, Disk: "/dev/" + filepath.Base(filepath.Dir(dir))}
	}
	u, err := s.usage()
	if err != nil {
		return WholeDisk{}, err
	}
	return s.wholeDisk(dir, u), nil
}

// wholeDisk reads the disk in dir (its real sysfs directory, which names
// the buses it hangs from).
func (s Sys) wholeDisk(dir string, u usage) WholeDisk {
	d := WholeDisk{Disk: readDisk(dir, u)}
	d.Removable = readAttr(filepath.Join(dir, "removable")) == "1"
	d.Vendor = readAttr(filepath.Join(dir, "device", "vendor"))
	d.Model = readAttr(filepath.Join(dir, "device", "model"))
	if d.Model == "" {
		d.Model = readAttr(filepath.Join(dir, "device", "name")) // an SD card's name
	}
	d.Bus = busOf(dir)
	for _, use := range d.InUse {
		if use.Kind == Mounted && use.MountPoint == "/" {
			d.System = true
		}
	}
	return d
}

// busOf names the bus a disk's sysfs path hangs from, the nearest one
// first: a USB reader's disk is on SCSI on USB, and is USB.
func busOf(dir string) string {
	for _, b := range []struct{ part, name string }{
		{"/usb", "USB"}, {"/mmc_host/", "SD"}, {"/nvme", "NVMe"}, {"/ata", "SATA"}, {"/virtio", "virtio"}, {"/host", "SCSI"},
		{"/virtual/block/loop", "loop"},
	} {
		if strings.Contains(dir, b.part) {
			return b.name
		}
	}
	return ""
}
