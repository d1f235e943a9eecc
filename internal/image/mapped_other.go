//go:build !linux

package image

import "os"

// mapFile maps nothing here (only Linux's mapping, and which filesystems
// it suits, is tested): the file is read with ReadAt.
func mapFile(*os.File, int64) *mappedFile { return nil }
