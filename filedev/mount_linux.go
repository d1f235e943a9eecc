//go:build linux

package filedev

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// checkUnmounted refuses a block device when it or any of its partitions
// is mounted: writing under a mounted filesystem corrupts both.
func checkUnmounted(path string, st fs.FileInfo, opts Options) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	info, sysBlock := opts.MountInfo, opts.SysBlock
	if info == "" {
		info = "/proc/self/mountinfo"
	}
	if sysBlock == "" {
		sysBlock = "/sys/dev/block"
	}
	f, err := os.Open(info)
	if err != nil {
		return fmt.Errorf("file target %s: cannot check for mounted partitions (%w): use --force if you are sure", path, err)
	}
	defer f.Close()
	dev := fmt.Sprintf("%d:%d", unix.Major(uint64(sys.Rdev)), unix.Minor(uint64(sys.Rdev)))
	mounted, err := mountedOn(f, path, dev, sysBlock)
	if err != nil {
		return fmt.Errorf("file target %s: reading %s: %w", path, info, err)
	}
	if len(mounted) > 0 {
		return fmt.Errorf("file target %s has mounted filesystems (%s): %w: unmount them first, or use --force",
			path, strings.Join(mounted, ", "), ErrMounted)
	}
	return nil
}

// mountedOn lists the mounts (as "source on mountpoint") that live on the
// block device at devPath with number dev ("major:minor"): the device itself,
// or a partition of it. A partition is recognised by its sysfs entry, whose
// parent directory is the whole disk, or failing that by its source name
// (sdb1, mmcblk0p1, nvme0n1p2 for sdb, mmcblk0, nvme0n1).
func mountedOn(mountinfo io.Reader, devPath, dev, sysBlock string) ([]string, error) {
	realDev, err := filepath.EvalSymlinks(devPath)
	if err != nil {
		realDev = devPath
	}
	var out []string
	sc := bufio.NewScanner(mountinfo)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
		fields := strings.Fields(sc.Text())
		sep := indexOf(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
			continue
		}
		num, point, source := fields[2], fields[4], fields[sep+2]
		if num == dev || partitionOf(sysBlock, num) == dev || namedPartition(source, realDev) {
			out = append(out, source+" on "+point)
		}
	}
	return out, sc.Err()
}

func indexOf(fields []string, s string) int {
	for i, f := range fields {
		if f == s {
			return i
		}
	}
	return -1
}

// partitionOf returns the device number of the disk that partition num
// belongs to, or "" when num is not a partition.
func partitionOf(sysBlock, num string) string {
	real, err := filepath.EvalSymlinks(filepath.Join(sysBlock, num))
	if err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(real, "partition")); err != nil {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(real), "dev"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// namedPartition reports whether source names a partition of disk by the
// kernel's naming: the disk name plus a number, with a "p" between when the
// disk name ends in a digit.
func namedPartition(source, disk string) bool {
	if real, err := filepath.EvalSymlinks(source); err == nil {
		source = real
	}
	rest, ok := strings.CutPrefix(source, disk)
	if !ok || rest == "" {
		return false
	}
	if last := disk[len(disk)-1]; last >= '0' && last <= '9' {
		if rest, ok = strings.CutPrefix(rest, "p"); !ok || rest == "" {
			return false
		}
	}
	return strings.Trim(rest, "0123456789") == ""
}
