//go:build !linux && !darwin

package cardbench

import (
	"errors"
	"os"
)

// openKernel opens path; without Linux's O_DIRECT or macOS's raw disk
// nodes only the buffered path exists here.
// PathKernelDirect names the points of the kernel's uncached path: no such path here.
const PathKernelDirect = "kernel uncached"

func openKernel(path string, direct bool) (*os.File, error) {
	if direct {
		return nil, errors.New("no uncached path to a disk on this system (O_DIRECT is Linux's, /dev/rdiskN macOS's)")
	}
	return os.Open(path)
}

func logicalBlockSize(*os.File) int { return 512 }

// dropCache cannot empty another system's cache portably: the buffered
// numbers then include cached reads, which the table says.
func dropCache(*os.File) error { return nil }
