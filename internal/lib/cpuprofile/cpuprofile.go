// Package cpuprofile writes a CPU profile of a whole run to a file named
// by the environment, for a build that links it (usbflash's -tags
// profile): how the slow-host harness sees where a run spends its CPU.
package cpuprofile

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// Env names the file a run's profile is written to.
const Env = "USBFLASH_CPUPROFILE"

// Start profiles the CPU into $USBFLASH_CPUPROFILE, when set, until the
// returned stop; what fails is said on errOut, and the run goes on.
func Start(errOut io.Writer) (stop func()) {
	path := os.Getenv(Env)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(errOut, "usbflash: cpu profile: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(errOut, "usbflash: cpu profile: %v\n", err)
		}
	}
}
