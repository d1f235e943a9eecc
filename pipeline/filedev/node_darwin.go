package filedev

import "strings"

// BypassName names how CacheBypass bypasses the page cache here: macOS
// has no O_DIRECT, and its raw disk node is the equivalent (the 14x of
// DESIGN.md is between these two nodes).
const BypassName = "raw"

// diskNode: macOS's disks are character devices (/dev/rdiskN) and block
// devices (/dev/diskN), read only for the comparison with the kernel.
func diskNode(opts Options) bool { return opts.ReadOnly && opts.Cache != CacheAuto }

// cacheNode opens the uncached raw node (/dev/rdiskN) for CacheBypass and
// the buffered one (/dev/diskN) for CacheUse, whichever of the two the
// user named; raw says the path opened is a raw disk node.
func cacheNode(path string, c Cache) (string, bool, error) {
	raw, buffered := diskNodes(path)
	switch c {
	case CacheBypass:
		return raw, strings.HasPrefix(raw, "/dev/rdisk"), nil
	case CacheUse:
		return buffered, false, nil
	}
	return path, false, nil
}
