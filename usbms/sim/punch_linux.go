package sim

import (
	"os"

	"golang.org/x/sys/unix"
)

// punchHole makes n bytes of f from off a hole, which reads as zeros;
// false when the file system cannot.
func punchHole(f *os.File, off, n int64) bool {
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n) == nil
}
