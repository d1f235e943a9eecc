package linuxdisk

import (
	"io/fs"
	"syscall"
)

// FileDevs gives the device numbers of what fi describes, as sysfs writes
// them: dev, the filesystem's device it lies on (st_dev), and rdev, the
// device it is (st_rdev, for a device node). ok is false when fi has no
// stat data.
func FileDevs(fi fs.FileInfo) (dev, rdev string, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", "", false
	}
	return DevNumber(uint64(st.Dev)), DevNumber(uint64(st.Rdev)), true
}
