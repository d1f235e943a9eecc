//go:build !unix

package drive

import (
	"fmt"
	"io/fs"
)

// fileID names the file st describes as well as this system lets a
// program without its own file IDs: by its size and time, which another
// card file put in its place has too but seldom.
func fileID(st fs.FileInfo) string {
	return fmt.Sprintf("%d@%d", st.Size(), st.ModTime().UnixNano())
}
