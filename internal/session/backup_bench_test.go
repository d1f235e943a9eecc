package session

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/osimage"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
	"github.com/usbflash/usbflash/pipeline"
)

// benchImageMB is the size of the OS-like image of the benchmarks below:
// USBFLASH_BENCH_MB, default 256 (1024 is the size; at 40 MB/s it
// takes several minutes on a shared two-core machine).
func benchImageMB(b *testing.B) int64 {
	if s := os.Getenv("USBFLASH_BENCH_MB"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("USBFLASH_BENCH_MB=%q: want a positive number of MiB", s)
		}
		return n
	}
	return 256
}

// spec parses a target the benchmark names.
func spec(b *testing.B, target string) drive.Spec {
	b.Helper()
	s, err := drive.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// timed runs f and returns how long it took.
func timed(b *testing.B, what string, f func() error) time.Duration {
	b.Helper()
	t := time.Now()
	if err := f(); err != nil {
		b.Fatalf("%s: %v", what, err)
	}
	return time.Since(t)
}

// BenchmarkBmapWrite: the OS-like image with its block map on a 40 MB/s
// simulated reader, against writing every byte; both verify what they
// wrote. Goal: bmap/full <= 0.75.
func BenchmarkBmapWrite(b *testing.B) {
	size := benchImageMB(b) << 20
	img := osimage.Generate(size, 1)
	dir := b.TempDir()
	imagePath := filepath.Join(dir, "os.img")
	if err := os.WriteFile(imagePath, img, 0o644); err != nil {
		b.Fatal(err)
	}
	m := testimage.WriteMap(b, imagePath+".bmap", img)
	card := []drive.Spec{spec(b, "sim:"+filepath.Join(dir, "card.img")+"?size="+strconv.FormatInt(size, 10)+"&speed=40MB/s")}
	write := func(choice BlockMapChoice) func() error {
		return func() error {
			_, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Engine: Engine{Verify: true, BlockMap: choice}}, card)
			return err
		}
	}
	b.ResetTimer()
	for range b.N {
		full := timed(b, "every byte", write(BlockMapChoice{Off: true}))
		mapped := timed(b, "with the map", write(BlockMapChoice{}))
		b.ReportMetric(full.Seconds(), "full-s")
		b.ReportMetric(mapped.Seconds(), "bmap-s")
		b.ReportMetric(mapped.Seconds()/full.Seconds(), "bmap/full")
		b.ReportMetric(float64(m.MappedBytes())/float64(size), "mapped-share")
	}
}

// BenchmarkReadBackup: a backup of a card holding the OS-like image from
// a 40 MB/s simulated reader, against the reader's own speed (the same
// reads into nothing). Goal: zst >= 0.95 of the reader. xz is compared
// with `xz -T2` compressing the same bytes from a file (xz-speedup > 1:
// usbflash is faster), and its size with xz's (xz-size: ours / xz's).
func BenchmarkReadBackup(b *testing.B) {
	size := benchImageMB(b) << 20
	dir := b.TempDir()
	cardPath := filepath.Join(dir, "card.img")
	if err := os.WriteFile(cardPath, osimage.Generate(size, 2), 0o644); err != nil {
		b.Fatal(err)
	}
	card := spec(b, "sim:"+cardPath+"?speed=40MB/s")
	backup := func(out string) func() error {
		return func() error {
			bk, err := NewBackup(BackupConfig{Out: filepath.Join(dir, out), Force: true})
			if err == nil {
				_, err = bk.Run(context.Background(), card)
			}
			return err
		}
	}
	b.ResetTimer()
	for range b.N {
		reader := timed(b, "the reader alone", func() error {
			d, err := drive.Open(context.Background(), card, drive.Options{ReadOnly: true})
			if err != nil {
				return err
			}
			defer d.Close()
			_, err = pipeline.Read(context.Background(), d.Dev, io.Discard, size, pipeline.ReadOptions{Name: d.Name})
			return err
		})
		zst := timed(b, "zst", backup("b.img.zst"))
		gz := timed(b, "gz", backup("b.img.gz"))
		ours := timed(b, "xz", backup("b.img.xz"))
		xzOut := filepath.Join(dir, "ref.xz")
		ref := timed(b, "xz -T2", func() error {
			return exec.Command("sh", "-c", "xz -T2 -6 -c "+cardPath+" > "+xzOut).Run()
		})
		b.ReportMetric(reader.Seconds()/zst.Seconds(), "zst/reader")
		b.ReportMetric(reader.Seconds()/gz.Seconds(), "gz/reader")
		b.ReportMetric(ref.Seconds()/ours.Seconds(), "xz-speedup")
		b.ReportMetric(fileSize(b, filepath.Join(dir, "b.img.xz"))/fileSize(b, xzOut), "xz-size")
		b.ReportMetric(float64(size)/reader.Seconds()/1e6, "reader-MB/s")
		b.ReportMetric(float64(size)/ours.Seconds()/1e6, "xz-MB/s")
		b.ReportMetric(float64(size)/ref.Seconds()/1e6, "xzT2-MB/s")
	}
}

func fileSize(b *testing.B, path string) float64 {
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return float64(st.Size())
}
