package cardbench

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// PathKernelDirect names the points of the kernel's uncached path: O_DIRECT reads.
const PathKernelDirect = "kernel O_DIRECT"

func openKernel(path string, direct bool) (*os.File, error) {
	flags := os.O_RDONLY
	if direct {
		flags |= syscall.O_DIRECT
	}
	return os.OpenFile(path, flags, 0)
}

// logicalBlockSize asks a block device for its sector size; a file has 512.
func logicalBlockSize(f *os.File) int {
	if n, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKSSZGET); err == nil && n > 0 {
		return n
	}
	return 512
}

// dropCache writes back nothing (the path only reads) and drops the
// cached pages of the whole device. A block device's cache goes with
// BLKFLSBUF as well, which fadvise alone does not always empty.
func dropCache(f *os.File) error {
	_ = unix.IoctlSetInt(int(f.Fd()), unix.BLKFLSBUF, 0) // only block devices have it
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
