//go:build unix

package drive

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileID names the file st describes among the system's: its device and
// inode.
func fileID(st fs.FileInfo) string {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", s.Dev, s.Ino)
	}
	return ""
}
