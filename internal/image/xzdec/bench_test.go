package xzdec

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ulikunitz/xz"
)

// Benchmark inputs are 64 MiB generated images compressed once with the xz
// CLI and cached in the temp directory (compressing takes longer than
// decoding). "whole" is OS-like (about 30% zero runs), "dense" has none.
const benchSize = 64 << 20

func benchFile(b *testing.B, kind string, args ...string) (path string, size int64) {
	b.Helper()
	needXZ(b)
	dir := filepath.Join(os.TempDir(), "usbflash-xzdec-bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	name := kind
	for _, a := range args {
		name += "_" + filepath.Base(a)
	}
	p := filepath.Join(dir, name+".xz")
	if _, err := os.Stat(p); err != nil {
		cachedXZ(b, dir, name+".xz", genImage(benchSize, 1234, kind == "dense"), args...)
	}
	return p, benchSize
}

// timeXZ runs `xz -dc args file` to /dev/null and returns its wall and
// CPU (user+system) time.
func timeXZ(b *testing.B, path string, args ...string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := exec.CommandContext(context.Background(), "xz", append(append([]string{"-dc"}, args...), path)...)
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// benchDecoder times decode (which must consume the whole file) against
// `xz -dc xzArgs` run right after each iteration, so that machine load
// affects both alike. x_vs_xz is our wall-clock throughput divided by xz's
// (above 1 means faster than xz); cpu_x_vs_xz is the same ratio for CPU
// time (user+system), which is what matters on a shared machine for the
// single-threaded case, and is much less noisy under load.
func benchDecoder(b *testing.B, path string, size int64, xzArgs []string, decode func(f *os.File) error) {
	var ours, oursCPU, ref, refCPU time.Duration
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		t0, c0 := time.Now(), cpuTime()
		if err := decode(f); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(t0)
		oursCPU += cpuTime() - c0
		f.Close()
		b.StopTimer()
		w, c := timeXZ(b, path, xzArgs...)
		ref += w
		refCPU += c
		b.StartTimer()
	}
	mb := float64(size) * float64(b.N) / 1e6
	b.ReportMetric(mb/ours.Seconds(), "MB/s")
	b.ReportMetric(mb/ref.Seconds(), "xz_MB/s")
	b.ReportMetric(ref.Seconds()/ours.Seconds(), "x_vs_xz")
	b.ReportMetric(mb/oursCPU.Seconds(), "cpu_MB/s")
	b.ReportMetric(mb/refCPU.Seconds(), "xz_cpu_MB/s")
	b.ReportMetric(refCPU.Seconds()/oursCPU.Seconds(), "cpu_x_vs_xz")
}

func discard(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}

func BenchmarkStreaming(b *testing.B) {
	for _, kind := range []string{"whole", "dense"} {
		b.Run(kind+"/xzdec", func(b *testing.B) {
			p, n := benchFile(b, kind, "-6")
			benchDecoder(b, p, n, []string{"-T1"}, func(f *os.File) error {
				r, err := NewReader(f)
				if err != nil {
					return err
				}
				return discard(r)
			})
		})
		b.Run(kind+"/ulikunitz", func(b *testing.B) {
			p, n := benchFile(b, kind, "-6")
			benchDecoder(b, p, n, []string{"-T1"}, func(f *os.File) error {
				r, err := xz.NewReader(bufio.NewReaderSize(f, 1<<20))
				if err != nil {
					return err
				}
				return discard(r)
			})
		})
	}
}

func BenchmarkParallel(b *testing.B) {
	for _, kind := range []string{"whole", "dense"} {
		b.Run(kind+"/xzdec", func(b *testing.B) {
			p, n := benchFile(b, kind, "-6", "-T2", "--block-size=8MiB")
			benchDecoder(b, p, n, []string{"-T2"}, func(f *os.File) error {
				st, err := f.Stat()
				if err != nil {
					return err
				}
				r, err := NewParallelReader(context.Background(), f, st.Size(), Options{Workers: 2})
				if err != nil {
					return err
				}
				defer r.Close()
				return discard(r)
			})
		})
		// The same file read once, in order, as a download is: its blocks
		// found by their headers, not by the index.
		b.Run(kind+"/xzdec-stream", func(b *testing.B) {
			p, n := benchFile(b, kind, "-6", "-T2", "--block-size=8MiB")
			benchDecoder(b, p, n, []string{"-T2"}, func(f *os.File) error {
				r, err := NewParallelStreamReader(context.Background(), onlyReader{f}, Options{Workers: 2})
				if err != nil {
					return err
				}
				defer r.Close()
				return discard(r)
			})
		})
	}
}

// onlyReader hides every method but Read.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
