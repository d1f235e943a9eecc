//go:build unix

package dlcache

import "golang.org/x/sys/unix"

// freeSpace is the bytes an unprivileged user may still write on dir's
// file system, -1 when it cannot be told.
func freeSpace(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// totalSpace is the size of dir's file system, -1 when it cannot be told.
func totalSpace(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Blocks) * int64(st.Bsize)
}
