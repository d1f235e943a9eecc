//go:build !unix

package dlcache

// freeSpace cannot be told here: the cache's size bound alone holds.
func freeSpace(string) int64 { return -1 }

func totalSpace(string) int64 { return -1 }
