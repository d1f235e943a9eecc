//go:build unix

package xzdec

import (
	"syscall"
	"time"
)

// cpuTime is this process's user+system CPU time. Comparing CPU time
// rather than wall time keeps the comparison with xz meaningful on a
// loaded machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
