package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/internal/osimage"
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

// cliTime runs one command line in-process and returns how long it took.
func cliTime(b *testing.B, args ...string) time.Duration {
	b.Helper()
	var stderr strings.Builder
	t := time.Now()
	if code := run(context.Background(), args, strings.NewReader(""), io.Discard, &stderr); code != exitOK {
		b.Fatalf("%v: exit %d: %s", args, code, stderr.String())
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
	image := filepath.Join(dir, "os.img")
	if err := os.WriteFile(image, img, 0o644); err != nil {
		b.Fatal(err)
	}
	m := makeMap(b, image+".bmap", img)
	card := "sim:" + filepath.Join(dir, "card.img") + "?size=" + strconv.FormatInt(size, 10) + "&speed=40MB/s"
	b.ResetTimer()
	for range b.N {
		full := cliTime(b, "write", "--yes", "--quiet", "--no-bmap", image, card)
		mapped := cliTime(b, "write", "--yes", "--quiet", image, card)
		b.ReportMetric(full.Seconds(), "full-s")
		b.ReportMetric(mapped.Seconds(), "bmap-s")
		b.ReportMetric(mapped.Seconds()/full.Seconds(), "bmap/full")
		b.ReportMetric(float64(m.MappedBytes())/float64(size), "mapped-share")
	}
}

// BenchmarkReadBackup: `read` of a card holding the OS-like image from a
// 40 MB/s simulated reader, against the reader's own speed (the same reads
// into nothing). Goal: zst >= 0.95 of the reader. xz is compared with
// `xz -T2` compressing the same bytes from a file (xz-speedup > 1: usbflash
// is faster), and its size with xz's (xz-size: ours / xz's).
func BenchmarkReadBackup(b *testing.B) {
	size := benchImageMB(b) << 20
	dir := b.TempDir()
	cardPath := filepath.Join(dir, "card.img")
	if err := os.WriteFile(cardPath, osimage.Generate(size, 2), 0o644); err != nil {
		b.Fatal(err)
	}
	card := "sim:" + cardPath + "?speed=40MB/s"
	b.ResetTimer()
	for range b.N {
		reader := readerTime(b, card, size)
		zst := cliTime(b, "read", "--quiet", "--force", card, filepath.Join(dir, "b.img.zst"))
		gz := cliTime(b, "read", "--quiet", "--force", card, filepath.Join(dir, "b.img.gz"))
		ours := cliTime(b, "read", "--quiet", "--force", card, filepath.Join(dir, "b.img.xz"))
		xzOut := filepath.Join(dir, "ref.xz")
		t := time.Now()
		if out, err := exec.Command("sh", "-c", "xz -T2 -6 -c "+cardPath+" > "+xzOut).CombinedOutput(); err != nil {
			b.Fatalf("xz -T2: %v: %s", err, out)
		}
		ref := time.Since(t)
		b.ReportMetric(reader.Seconds()/zst.Seconds(), "zst/reader")
		b.ReportMetric(reader.Seconds()/gz.Seconds(), "gz/reader")
		b.ReportMetric(ref.Seconds()/ours.Seconds(), "xz-speedup")
		b.ReportMetric(fileSize(b, filepath.Join(dir, "b.img.xz"))/fileSize(b, xzOut), "xz-size")
		b.ReportMetric(float64(size)/reader.Seconds()/1e6, "reader-MB/s")
		b.ReportMetric(float64(size)/ours.Seconds()/1e6, "xz-MB/s")
		b.ReportMetric(float64(size)/ref.Seconds()/1e6, "xzT2-MB/s")
	}
}

// readerTime reads size bytes of the card into nothing, through the same
// open path and engine as `read`.
func readerTime(b *testing.B, card string, size int64) time.Duration {
	b.Helper()
	t, err := drive.Parse(card)
	if err != nil {
		b.Fatal(err)
	}
	d, err := drive.Open(context.Background(), t, drive.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	start := time.Now()
	if _, err := pipeline.Read(context.Background(), d.Dev, io.Discard, size, pipeline.ReadOptions{Name: d.Name}); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func fileSize(b *testing.B, path string) float64 {
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return float64(st.Size())
}
