package imagedst

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/xzdec"
)

// osLike is size bytes of text, noise and zero runs.
func osLike(size int) []byte {
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), 1))
	for off := 0; off < size; off += 64 << 10 {
		end := min(off+20<<10, size)
		switch (off >> 16) % 3 {
		case 0:
			for i := off; i < end; i++ {
				b[i] = byte(r.Uint32())
			}
		case 1:
			for i := off; i < end; i++ {
				b[i] = "usbflash backup of an SD card\n"[i%30]
			}
		}
	}
	return b
}

// TestFormatsRoundTrip: every format decodes back to the input with
// usbflash's own decoders and with the format's reference tool, for sizes
// around the chunk boundaries, and usbflash knows the size from the file.
func TestFormatsRoundTrip(t *testing.T) {
	tools := map[string][]string{Zstd: {"zstd", "-dc"}, Gzip: {"gzip", "-dc"}, Xz: {"xz", "-dc"}, Raw: {"cat"}}
	for _, name := range []string{"b.img.zst", "b.img.gz", "b.img.xz", "b.img"} {
		for _, size := range []int{0, 1000, xzChunk, 2*xzChunk + 12345} {
			data := osLike(size)
			path := filepath.Join(t.TempDir(), name)
			f, err := Create(path, false)
			if err != nil {
				t.Fatal(err)
			}
			// Odd-sized writes cross the chunk boundaries.
			for p := data; len(p) > 0; {
				k := min(len(p), 777777)
				if _, err := f.Write(p[:k]); err != nil {
					t.Fatal(err)
				}
				p = p[k:]
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("%s exists before Commit", path)
			}
			if err := f.Commit(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path + PartSuffix); !os.IsNotExist(err) {
				t.Fatalf("%s left behind", path+PartSuffix)
			}
			tool := tools[FormatOf(name)]
			out, err := exec.Command(tool[0], append(tool[1:], path)...).Output()
			if err != nil || !bytes.Equal(out, data) {
				t.Fatalf("%s (%d bytes): %s gives %d bytes, %v", name, size, tool[0], len(out), err)
			}
			if size == 0 {
				continue // usbflash refuses to write an empty image; the tools above read it
			}
			src, err := image.OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(src)
			src.Close()
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s (%d bytes): usbflash decodes %d bytes, %v", name, size, len(got), err)
			}
			if FormatOf(name) != Gzip && (!src.SizeExact || src.Size != int64(size)) {
				t.Errorf("%s: usbflash reads the size as %d (exact %v), want %d", name, src.Size, src.SizeExact, size)
			}
		}
	}
}

// TestXzIsParallelDecodable: a multi-chunk .xz has one block per chunk in
// its indexes, which is what lets usbflash decode it on every core.
func TestXzIsParallelDecodable(t *testing.T) {
	data := osLike(3*xzChunk + 5)
	path := filepath.Join(t.TempDir(), "b.img.xz")
	f, err := Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data)
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	idx, err := xzdec.ReadIndex(bytes.NewReader(raw), int64(len(raw)))
	if err != nil || len(idx.Blocks) != 4 {
		t.Fatalf("index: %v, %d blocks, want 4", err, len(idx.Blocks))
	}
	r, err := xzdec.NewParallelReader(context.Background(), bytes.NewReader(raw), int64(len(raw)), xzdec.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("parallel decode: %d bytes, %v", len(got), err)
	}
}

func TestCreateRefusesExistingAndAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.img.zst")
	os.WriteFile(path, []byte("old backup"), 0o644)
	if _, err := Create(path, false); !errors.Is(err, ErrExists) {
		t.Fatalf("Create over an existing file: %v, want ErrExists", err)
	}
	f, err := Create(path, true)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(osLike(100000))
	f.Abort()
	if old, _ := os.ReadFile(path); string(old) != "old backup" {
		t.Error("Abort touched the existing file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("after Abort the directory holds %d entries, want only the old file", len(entries))
	}
}
