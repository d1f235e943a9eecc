//go:build !linux && !darwin

package filedev

import "errors"

// BypassName names how CacheBypass bypasses the page cache: it does not
// here, and opening with it fails.
const BypassName = "uncached"

// diskNode: the BSDs' disks are character devices, read only for the
// comparison with the kernel, through the page cache.
func diskNode(opts Options) bool { return opts.ReadOnly && opts.Cache == CacheUse }

// cacheNode refuses CacheBypass: without Linux's O_DIRECT or macOS's raw
// disk nodes only the buffered path exists here.
func cacheNode(path string, c Cache) (string, bool, error) {
	if c == CacheBypass {
		return path, false, errors.New("no uncached path to a disk on this system (O_DIRECT is Linux's, /dev/rdiskN macOS's)")
	}
	return path, false, nil
}
