//go:build !linux

package linuxdisk

import "io/fs"

// FileDevs has no device numbers to give off Linux: ok is always false.
func FileDevs(fi fs.FileInfo) (dev, rdev string, ok bool) { return "", "", false }
