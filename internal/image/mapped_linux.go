package image

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps f, a regular file of size bytes, for reading; nil when it
// cannot or should not be mapped (not a regular file, empty, too large to
// map whole here, on a network or FUSE filesystem, or a filesystem that
// does not map), and the file is read with read(2).
func mapFile(f *os.File, size int64) *mappedFile {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || size <= 0 || size > maxMapped || fi.Size() != size || remoteFS(f) {
		return nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	// Read in order, once: more read-ahead from disks, pages dropped
	// behind the reader. Advice only: an error changes nothing.
	_ = unix.Madvise(data, unix.MADV_SEQUENTIAL)
	// Where the file's pages may be huge (a tmpfs mounted huge=advise),
	// a fault maps 2 MiB of it instead of the fault-around's 64 KiB: a
	// 384 MiB image took 6,600 faults, a tenth of a second of a slow
	// host's write. Elsewhere this changes nothing.
	_ = unix.Madvise(data, unix.MADV_HUGEPAGE)
	// MADV_DONTNEED on a shared mapping of a file only unmaps: the
	// pages stay in the page cache, and the file is not changed.
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
		drop:  func(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) },
	}
}

// remoteFS tells whether f lies on a filesystem whose pages are fetched
// one fault at a time over a wire or from another process (9p, NFS, SMB,
// FUSE, ...): there a large read(2) is one request where a mapping is
// many, and the file may change under the mapping by another host.
func remoteFS(f *os.File) bool {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return true
	}
	switch uint32(st.Type) {
	case unix.V9FS_MAGIC, unix.NFS_SUPER_MAGIC, unix.SMB_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC,
		unix.CIFS_SUPER_MAGIC, unix.FUSE_SUPER_MAGIC, unix.CODA_SUPER_MAGIC, unix.AFS_FS_MAGIC,
		unix.AFS_SUPER_MAGIC, unix.CEPH_SUPER_MAGIC, unix.OCFS2_SUPER_MAGIC:
		return true
	}
	return false
}
