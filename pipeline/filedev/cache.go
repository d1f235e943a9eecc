package filedev

import "strings"

// Cache says how a Device's transfers meet the kernel's page cache.
type Cache int

const (
	// CacheAuto bypasses the page cache where the filesystem allows it
	// (O_DIRECT) and goes through it where not, falling back for good if
	// the kernel refuses a direct transfer: what a file: target wants, as
	// uncached as the filesystem permits.
	CacheAuto Cache = iota
	// CacheBypass bypasses the page cache or fails: O_DIRECT on Linux,
	// never given up after opening; the raw node /dev/rdiskN on macOS,
	// whichever of /dev/diskN and /dev/rdiskN was named; no such path
	// elsewhere. A measurement of the uncached path must not measure the
	// cache unawares.
	CacheBypass
	// CacheUse goes through the page cache, as dd and most programs do:
	// the buffered path to compare with, whose cache DropCache empties.
	// On macOS it reads the buffered node /dev/diskN.
	CacheUse
)

// DropCache empties the page cache of the file or device, so the next
// buffered read goes to the medium; there is nothing to drop while
// transfers bypass it (Direct). Pages written and not yet synced stay.
// Where the system offers no way to drop one file's cache (macOS, other
// systems) it does nothing, and buffered reads of a region read twice come
// from memory.
func (d *Device) DropCache() error {
	if d.Direct() {
		return nil
	}
	return dropCache(d)
}

// diskNodes returns macOS's raw and buffered nodes of the disk path names,
// given either (/dev/rdisk4 or /dev/disk4); any other path is both.
func diskNodes(path string) (raw, buffered string) {
	if n, ok := strings.CutPrefix(path, "/dev/rdisk"); ok {
		return path, "/dev/disk" + n
	}
	if n, ok := strings.CutPrefix(path, "/dev/disk"); ok {
		return "/dev/rdisk" + n, path
	}
	return path, path
}
