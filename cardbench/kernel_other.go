//go:build !linux

package cardbench

import (
	"errors"
	"os"
)

// openKernel opens path; without Linux's O_DIRECT only the buffered path
// exists here (on macOS, /dev/rdiskN is the uncached node: compare it
// with --compare file:/dev/rdiskN).
func openKernel(path string, direct bool) (*os.File, error) {
	if direct {
		return nil, errors.New("O_DIRECT is a Linux flag: compare the raw node (/dev/rdiskN on macOS) instead")
	}
	return os.Open(path)
}

func logicalBlockSize(*os.File) int { return 512 }

// dropCache cannot empty another system's cache portably: the buffered
// numbers then include cached reads, which the table says.
func dropCache(*os.File) error { return nil }
