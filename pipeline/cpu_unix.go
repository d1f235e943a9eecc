//go:build unix

package pipeline

import (
	"syscall"
	"time"
)

// processCPU is the user and system time the process has used so far: the
// decoder's goroutines, the hash, the copies and the USB stack's system
// calls alike, which is what a CPU cost per byte has to count.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
