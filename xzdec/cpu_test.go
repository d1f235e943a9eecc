package xzdec

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// xzCPU runs xz -dc args path and returns its CPU time.
func xzCPU(t testing.TB, path string, args ...string) time.Duration {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "xz", append(append([]string{"-dc"}, args...), path)...)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// TestCPURatio is a manual tool (XZDEC_CPU=file.xz): it decodes the file
// with the streaming decoder (or, with XZDEC_PARALLEL set, the parallel
// one) and with xz -dc -T1 a few times each and logs the CPU-time
// throughput of both.
func TestCPURatio(t *testing.T) {
	path := os.Getenv("XZDEC_CPU")
	if path == "" {
		t.Skip("set XZDEC_CPU=file.xz")
	}
	var ours, ref, wall time.Duration
	var n int64
	for i := 0; i < 3; i++ {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		c0, t0 := cpuTime(), time.Now()
		st, _ := f.Stat()
		var r io.Reader
		if os.Getenv("XZDEC_PARALLEL") != "" {
			r, err = NewParallelReader(context.Background(), f, st.Size(), Options{})
		} else {
			r, err = NewReader(f)
		}
		if err != nil {
			t.Fatal(err)
		}
		k, err := io.Copy(io.Discard, r)
		if err != nil {
			t.Fatal(err)
		}
		ours += cpuTime() - c0
		wall += time.Since(t0)
		n += k
		f.Close()
		ref += xzCPU(t, path, "-T1")
	}
	t.Logf("ours %.1f MB/s CPU (%.1f MB/s wall, %.0f%% CPU), xz -T1 %.1f MB/s CPU, CPU ratio %.3f",
		float64(n)/ours.Seconds()/1e6, float64(n)/wall.Seconds()/1e6, 100*ours.Seconds()/wall.Seconds(),
		float64(n)/ref.Seconds()/1e6, ref.Seconds()/ours.Seconds())
}
