package image

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

const (
	benchImageSize = 64 << 20
	benchSeed      = 42
)

// benchCompressed returns the benchmark image compressed with c, cached in
// the temp dir: compressing 64 MiB with xz or bzip2 takes far longer than
// decoding it, and the benchmark function runs several times per `go test`.
func benchCompressed(b *testing.B, c srcCodec) []byte {
	b.Helper()
	name := fmt.Sprintf("usbflash-bench-%s-%d-%d-v1", c.format, benchImageSize, benchSeed)
	cached := filepath.Join(os.TempDir(), name)
	if data, err := os.ReadFile(cached); err == nil && len(data) > 0 {
		return data
	}
	data := srcCompress(b, c, genOSImage(benchImageSize, benchSeed))
	tmp := cached + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err == nil {
		os.Rename(tmp, cached) // whole or not at all: a torn cache would mislead every later run
	}
	return data
}

func benchDecode(b *testing.B, f Format) {
	var codec srcCodec
	for _, c := range srcCodecs {
		if c.format == f {
			codec = c
		}
	}
	if f == FormatXz {
		// xz 5.4 and later compress in blocks by default; so do most
		// published images.
		codec.cli = []string{"xz", "-c", "-6", "-T2"}
	}
	comp := benchCompressed(b, codec)
	buf := make([]byte, 1<<20) // the pipeline reads into 1 MiB ring buffers
	b.SetBytes(benchImageSize)
	for b.Loop() {
		s, err := New(bytes.NewReader(comp), int64(len(comp)))
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for {
			k, err := s.Read(buf)
			n += int64(k)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
		if n != benchImageSize {
			b.Fatalf("decoded %d bytes, want %d", n, benchImageSize)
		}
	}
	// After the loop: ResetTimer would discard it.
	b.ReportMetric(float64(len(comp))/benchImageSize, "ratio")
}

func BenchmarkDecodeXz(b *testing.B)    { benchDecode(b, FormatXz) }
func BenchmarkDecodeGzip(b *testing.B)  { benchDecode(b, FormatGzip) }
func BenchmarkDecodeZstd(b *testing.B)  { benchDecode(b, FormatZstd) }
func BenchmarkDecodeBzip2(b *testing.B) { benchDecode(b, FormatBzip2) }
