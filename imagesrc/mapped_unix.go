//go:build unix

package imagesrc

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps f, a regular file of size bytes, for reading; nil when it
// cannot be mapped (not a regular file, empty, too large to map whole here,
// or a filesystem that does not map), and the file is read with read(2).
func mapFile(f *os.File, size int64) *mappedFile {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || size <= 0 || size > maxMapped || fi.Size() != size {
		return nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	// Read in order, once: more read-ahead from disks, pages dropped
	// behind the reader. Advice only: an error changes nothing.
	_ = unix.Madvise(data, unix.MADV_SEQUENTIAL)
	return &mappedFile{
		data: data,
		size: func() (int64, error) {
			fi, err := f.Stat()
			if err != nil {
				return 0, err
			}
			return fi.Size(), nil
		},
		unmap: func() error { return unix.Munmap(data) },
	}
}
