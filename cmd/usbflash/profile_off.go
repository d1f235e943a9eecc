//go:build !profile

package main

// startProfiling is a no-op: CPU profiles are a -tags profile build's
// (profile_on.go), so the shipped binary links no profiler.
func startProfiling() (stop func()) { return func() {} }
