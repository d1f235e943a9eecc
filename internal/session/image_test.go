package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// TestRunImages: every format is written, padded to whole blocks and
// verified; what is wrong with an image or a card stops the write before
// the first byte (a write-protected card, an image larger than the card,
// one too small to be an image, a damaged container, a size claim the data
// contradicts) or, when found only by writing (a gzip or bzip2 image larger
// than the card, a device fault, an image changed while read), stops it
// with the first transfer zeroed and no verify.
func TestRunImages(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(2<<20+1234, 11)
	page := []byte("<!DOCTYPE html>\n<html><body><h1>404 Not Found</h1></body></html>\n")
	packed := map[string][]byte{}
	for _, f := range []string{"gzip", "xz", "zstd", "bzip2", "zip"} {
		packed[f] = testimage.Compress(t, f, img)
	}
	corrupt := func(format string) []byte {
		d := packed[format]
		return d[:len(d)*2/3] // a truncated download
	}
	for _, tc := range []struct {
		name   string
		image  string // the file's name
		data   []byte
		card   string // sim: options
		cfg    func(*Config)
		change bool // rewrite the image once the session has started
		// err checks the session's error; nil: it succeeds.
		err func(error) bool
		// changed: the card's first MiB is no longer its old bytes;
		// boots: it starts with the image.
		changed, boots bool
		verified       bool
	}{
		{name: "raw", image: "os.img", data: img, card: "size=4MiB", changed: true, boots: true, verified: true},
		{name: "gzip, sha256", image: "os.img.gz", data: packed["gzip"], card: "size=4MiB",
			cfg: func(c *Config) { c.Engine.VerifyMethod = pipeline.MethodSHA256 }, changed: true, boots: true, verified: true},
		{name: "xz", image: "os.img.xz", data: packed["xz"], card: "size=4MiB", changed: true, boots: true, verified: true},
		{name: "zstd, sha256", image: "os.img.zst", data: packed["zstd"], card: "size=4MiB",
			cfg: func(c *Config) { c.Engine.VerifyMethod = pipeline.MethodSHA256 }, changed: true, boots: true, verified: true},
		{name: "bzip2", image: "os.img.bz2", data: packed["bzip2"], card: "size=4MiB", changed: true, boots: true, verified: true},
		{name: "zip, sha256", image: "os.img.zip", data: packed["zip"], card: "size=4MiB",
			cfg: func(c *Config) { c.Engine.VerifyMethod = pipeline.MethodSHA256 }, changed: true, boots: true, verified: true},
		{name: "no verify", image: "os.img", data: img, card: "size=4MiB", cfg: func(c *Config) { c.Engine.Verify = false }, changed: true, boots: true},
		{name: "one transfer exactly", image: "os.img", data: img[:64<<10], card: "size=4MiB",
			cfg: func(c *Config) { c.Engine.TransferSize = 64 << 10 }, changed: true, boots: true, verified: true},

		{name: "write-protected", image: "os.img.xz", data: packed["xz"], card: "size=4MiB&wp=1",
			err: func(err error) bool { return errors.Is(err, blockdev.ErrWriteProtected) }},
		{name: "larger than the card", image: "os.img.xz", data: packed["xz"], card: "size=1MiB",
			err: func(err error) bool { return errors.As(err, new(*blockdev.CapacityError)) }},
		{name: "larger than the card, found by writing gzip", image: "os.img.gz", data: packed["gzip"], card: "size=1MiB",
			err: func(err error) bool { return errors.As(err, new(*blockdev.CapacityError)) }, changed: true},
		{name: "larger than the card, found by writing bzip2", image: "os.img.bz2", data: packed["bzip2"], card: "size=1MiB",
			err: func(err error) bool { return errors.As(err, new(*blockdev.CapacityError)) }, changed: true},
		{name: "an error page named .xz", image: "os.img.xz", data: page, card: "size=4MiB",
			err: says("named .xz", "HTML document")},
		{name: "an error page named .img", image: "os.img", data: page, card: "size=4MiB",
			err: isTooSmall("only 65 bytes", "HTML document")},
		{name: "a tiny xz archive", image: "os.img.xz", data: testimage.Compress(t, "xz", page), card: "size=4MiB",
			err: isTooSmall("only 65 bytes", "HTML document")},
		{name: "a checksum file named .img", image: "os.img", data: []byte("3f2a  os.img.xz\n"), card: "size=4MiB",
			cfg: func(c *Config) { c.Engine.TransferSize = 4096 }, err: isTooSmall("only 16 bytes", "(text)")},
		{name: "an error page, forced", image: "os.img", data: page, card: "size=4MiB",
			cfg: func(c *Config) { c.Targets.Force = true }, changed: true, boots: true, verified: true},
		{name: "a truncated gzip", image: "os.img.gz", data: corrupt("gzip"), card: "size=4MiB", err: isImage("gzip", "byte"), changed: true},
		{name: "a truncated xz", image: "os.img.xz", data: corrupt("xz"), card: "size=4MiB", err: isImage("xz", "byte"), changed: true},
		{name: "a truncated zstd", image: "os.img.zst", data: corrupt("zstd"), card: "size=4MiB", err: isImage("zstd", "byte"), changed: true},
		{name: "a truncated bzip2", image: "os.img.bz2", data: corrupt("bzip2"), card: "size=4MiB", err: isImage("bzip2", "byte"), changed: true},
		{name: "a truncated zip", image: "os.img.zip", data: corrupt("zip"), card: "size=4MiB", err: isImage("zip", "byte")},
		{name: "a zstd frame that claims less", image: "os.img.zst", data: zstdClaimingLess(t, img), card: "size=4MiB",
			err: isImage("zstd", "compressed byte"), changed: true},
		{name: "a truncated gzip with a huge size hint", image: "os.img.gz", data: gzipHintingHuge(t, packed["gzip"]), card: "size=4MiB",
			err: isImage("gzip", "truncated"), changed: true},
		{name: "a device fault", image: "os.img", data: img, card: "size=4MiB&fault=medium-error:lba=1000,persistent",
			cfg: func(c *Config) { c.Engine.TransferSize = 64 << 10 }, err: says("LBA 896-1023"), changed: true},
		{name: "the image changed while written", image: "os.img", data: img, card: "size=4MiB", change: true,
			err: isImage("image changed while it was being written"), changed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			imageRef := filepath.Join(dir, tc.image)
			if err := os.WriteFile(imageRef, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			card := filepath.Join(dir, "card.img")
			old := bytes.Repeat([]byte{0xA5}, 1<<20)
			if err := os.WriteFile(card, old, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := Config{Image: image.Ref{Path: imageRef}, Engine: Engine{TransferSize: 256 << 10, Buffers: 4, Verify: true}}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			var (
				mu     sync.Mutex // the session's goroutines report
				phases []pipeline.Phase
				last   Progress // the write's last
			)
			cfg.Output.Observer = ObserverFunc(func(e Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e := e.(type) {
				case Started:
					if tc.change {
						rewrite(t, imageRef)
					}
				case Progress:
					if len(phases) == 0 || phases[len(phases)-1] != e.Phase {
						phases = append(phases, e.Phase)
					}
					if e.Phase == pipeline.PhaseWrite {
						last = e
					}
				}
			})
			res, err := Run(context.Background(), cfg, simSpecs(t, "", card+"?"+tc.card))
			if tc.err == nil && err != nil || tc.err != nil && !tc.err(err) {
				t.Fatalf("Run: %v (%T)", err, err)
			}
			got, rerr := os.ReadFile(card)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if changed := !bytes.Equal(got[:len(old)], old); changed != tc.changed {
				t.Errorf("the card changed: %v, want %v", changed, tc.changed)
			}
			n := min(len(tc.data), len(got), 64<<10)
			data := img
			if tc.name == "an error page, forced" {
				data = page
			}
			if boots := bytes.Equal(got[:min(n, len(data))], data[:min(n, len(data))]); boots != tc.boots {
				t.Errorf("the card starts with the image: %v, want %v", boots, tc.boots)
			}
			if tc.err != nil && tc.changed && !bytes.Equal(got[:512], make([]byte, 512)) {
				t.Error("the first transfer is not left zeroed")
			}
			mu.Lock()
			defer mu.Unlock()
			if verify := len(phases) > 0 && phases[len(phases)-1] == pipeline.PhaseVerify; verify != tc.verified {
				t.Errorf("phases %v: verified %v, want %v", phases, verify, tc.verified)
			}
			if !tc.boots || tc.err != nil {
				return
			}
			o := res.Cards[0]
			size := len(data)
			if tc.name != "an error page, forced" {
				size = len(tc.data)
				if tc.image != "os.img" {
					size = len(img)
				}
			}
			if !bytes.Equal(got[:size], data[:size]) {
				t.Error("the card does not hold the image")
			}
			if tail := got[size : (size+511)/512*512]; !bytes.Equal(tail, make([]byte, len(tail))) {
				t.Error("the last block is not zero-padded")
			}
			if o.Verified() != tc.verified {
				t.Errorf("verified %v, want %v", o.Verified(), tc.verified)
			}
			if sum := sha256.Sum256(data[:size]); cfg.Engine.VerifyMethod == pipeline.MethodSHA256 && o.Write.SHA256 != sum {
				t.Error("the SHA-256 of the decoded image is not the image's")
			}
			// Progress counts decoded bytes, and for a compressed file its
			// own too, up to its size.
			compressed := tc.image != "os.img"
			if last.Done != int64(size) || (last.CompressedDone >= 0) != compressed ||
				compressed && (last.CompressedTotal != int64(len(tc.data)) || last.CompressedDone > last.CompressedTotal) {
				t.Errorf("the write's last progress %+v: want %d decoded bytes, compressed ones of %d: %v", last, size, len(tc.data), compressed)
			}
		})
	}
}

// says: an error whose text says each of want.
func says(want ...string) func(error) bool {
	return func(err error) bool {
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				return false
			}
		}
		return true
	}
}

// isImage: an *imagesrc.Error saying each of want.
func isImage(want ...string) func(error) bool {
	return func(err error) bool { return errors.As(err, new(*image.Error)) && says(want...)(err) }
}

// isTooSmall: the refusal of an image too small to be one, saying want.
func isTooSmall(want ...string) func(error) bool {
	return func(err error) bool { return errors.Is(err, ErrTooSmallImage) && says(want...)(err) }
}

// rewrite changes the image file in place, as a second download over it
// would, and moves its time on (a coarse clock may not tick).
func rewrite(t *testing.T, imageRef string) {
	f, err := os.OpenFile(imageRef, os.O_WRONLY, 0)
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := f.WriteAt([]byte("rewritten"), 1<<20); err != nil {
		t.Error(err)
	}
	f.Close()
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(imageRef, later, later); err != nil {
		t.Error(err)
	}
}

// zstdClaimingLess is img as one zstd frame whose content size says 4 KiB
// less than it holds.
func zstdClaimingLess(t *testing.T, img []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	zst := enc.EncodeAll(img, nil) // records the content size
	enc.Close()
	var h zstd.Header
	if err := h.Decode(zst); err != nil || !h.HasFCS || zst[4]>>6 != 2 {
		t.Fatalf("want a zstd frame with a 4-byte content size: %v", err)
	}
	fcs := zst[h.HeaderSize-4 : h.HeaderSize]
	binary.LittleEndian.PutUint32(fcs, binary.LittleEndian.Uint32(fcs)-4096)
	return zst
}

// gzipHintingHuge is a cut of the gzip file gz whose last 4 bytes read as a size
// hint larger than a 4 MiB card: what once made the write refuse with "use
// a larger card" instead of saying the file is truncated.
func gzipHintingHuge(t *testing.T, gz []byte) []byte {
	for cut := len(gz) / 2; cut < len(gz)-8; cut++ {
		src, err := image.New(bytes.NewReader(gz[:cut]), int64(cut))
		if src != nil {
			src.Close()
		}
		if err == nil && src.Size > 4<<20 {
			return gz[:cut]
		}
	}
	t.Fatal("no cut of the gzip file makes a size hint over 4 MiB")
	return nil
}
