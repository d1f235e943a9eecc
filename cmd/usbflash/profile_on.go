//go:build profile

package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfiling writes a CPU profile of the whole run to
// $USBFLASH_CPUPROFILE, when set, in a build with -tags profile: how the
// slow-host harness (e2e, make bench-slowhost PROFILE=1) sees where a run
// spends its CPU inside the guest. The returned func ends the profile.
func startProfiling() (stop func()) {
	path := os.Getenv("USBFLASH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "usbflash: cpu profile: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "usbflash: cpu profile: %v\n", err)
		}
	}
}
