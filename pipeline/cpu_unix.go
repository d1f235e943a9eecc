//go:build unix

package pipeline

import (
	"syscall"
	"time"
)

// processUsage is what the process has used so far (getrusage of the
// whole process, every thread): its CPU time (the decoder's goroutines,
// the hash, the copies and the USB stack's system calls alike, which is
// what a CPU cost per byte has to count), its context switches and its
// page faults.
func processUsage() Usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Usage{}
	}
	return Usage{
		User: time.Duration(ru.Utime.Nano()), System: time.Duration(ru.Stime.Nano()),
		VoluntarySwitches: int64(ru.Nvcsw), InvoluntarySwitches: int64(ru.Nivcsw),
		MinorFaults: int64(ru.Minflt), MajorFaults: int64(ru.Majflt),
	}
}
