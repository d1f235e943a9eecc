//go:build profile

package main

import (
	"os"

	"github.com/usbflash/usbflash/internal/lib/cpuprofile"
)

// startProfiling writes a CPU profile of the whole run to
// $USBFLASH_CPUPROFILE (cpuprofile), in a build with -tags profile.
func startProfiling() (stop func()) { return cpuprofile.Start(os.Stderr) }
