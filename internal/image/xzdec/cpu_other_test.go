//go:build !unix

package xzdec

import "time"

// cpuTime is 0 where the process's CPU time is not to be had: the
// benchmarks then report wall time only.
func cpuTime() time.Duration { return 0 }
