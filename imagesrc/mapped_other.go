//go:build !unix

package imagesrc

import "os"

// mapFile maps nothing here: the file is read with ReadAt.
func mapFile(*os.File, int64) *mappedFile { return nil }
