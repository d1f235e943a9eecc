package xzdec

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// xzCPU runs xz -dc args path and returns its CPU and wall time.
func xzCPU(t testing.TB, path string, args ...string) (cpu, wall time.Duration) {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "xz", append(append([]string{"-dc"}, args...), path)...)
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), time.Since(t0)
}

// TestCPURatio is a manual tool (XZDEC_CPU=file.xz): it decodes the file
// with the streaming decoder (or, with XZDEC_PARALLEL set, the parallel
// one, against xz -dc -T2) and with xz -dc -T1 a few times each and logs
// the CPU-time throughput of both, and for the parallel reader the
// wall-clock ratio too.
func TestCPURatio(t *testing.T) {
	path := os.Getenv("XZDEC_CPU")
	if path == "" {
		t.Skip("set XZDEC_CPU=file.xz")
	}
	var ours, ref, wall, refWall time.Duration
	var n int64
	parallel := os.Getenv("XZDEC_PARALLEL") != ""
	xzArg := "-T1"
	if parallel {
		xzArg = "-T2"
	}
	for i := 0; i < 3; i++ {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		c0, t0 := cpuTime(), time.Now()
		st, _ := f.Stat()
		var r io.Reader
		if parallel {
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
		c, w := xzCPU(t, path, xzArg)
		ref += c
		refWall += w
	}
	t.Logf("ours %.1f MB/s CPU (%.1f MB/s wall, %.0f%% CPU), xz %s %.1f MB/s CPU (%.1f MB/s wall), CPU ratio %.3f wall ratio %.3f",
		float64(n)/ours.Seconds()/1e6, float64(n)/wall.Seconds()/1e6, 100*ours.Seconds()/wall.Seconds(),
		xzArg, float64(n)/ref.Seconds()/1e6, float64(n)/refWall.Seconds()/1e6,
		ref.Seconds()/ours.Seconds(), refWall.Seconds()/wall.Seconds())
}
