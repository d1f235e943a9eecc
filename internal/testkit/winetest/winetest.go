// Package winetest tells a test of the Windows build whether it runs
// under Wine (make test-windows), so that what Wine does not implement
// (physical drives, volume extents and locks) is skipped there by name
// and with the reason, and asserted on Windows.
package winetest

// Running says whether this process runs under Wine: false off Windows.
func Running() bool { return running() }
