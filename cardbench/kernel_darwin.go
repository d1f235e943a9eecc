package cardbench

import "os"

// PathKernelDirect names the points of the kernel's uncached path: reads of the raw node, /dev/rdiskN.
const PathKernelDirect = "kernel raw"

// openKernel opens the uncached raw node (/dev/rdiskN) for the direct
// column and the buffered one (/dev/diskN) for the other, whichever of
// the two the user named: macOS has no O_DIRECT, the raw node is its
// equivalent (the 14x of DESIGN.md is between these two).
func openKernel(path string, direct bool) (*os.File, error) {
	raw, buffered := diskNodes(path)
	if direct {
		return os.Open(raw)
	}
	return os.Open(buffered)
}

func logicalBlockSize(*os.File) int { return 512 }

// dropCache: the buffered node's cache cannot be dropped from here, so
// its numbers include cached reads when a region is read twice.
func dropCache(*os.File) error { return nil }
