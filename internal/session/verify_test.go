package session

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/pipeline"
)

// TestRunVerifyHash: a write verifies by per-transfer digests unless told
// sha256, which alone computes the image's SHA-256. A fake card that drops
// what is written past its first MiB fails the verify either way, at the
// first byte past it: the digests name the command's range and decoding
// the image again up to it names the byte.
func TestRunVerifyHash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := testpattern.Bytes(3<<20+700, 7) // not whole blocks
	imagePath := filepath.Join(dir, "os.img")
	if err := os.WriteFile(imagePath, img, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, card string
		method     pipeline.VerifyMethod
		badLBA     int64 // -1: verifies
	}{
		{"default", "good.img?size=8MiB", pipeline.MethodDigests, -1},
		{"sha256", "good.img?size=8MiB", pipeline.MethodSHA256, -1},
		{"xxh3 fake card", "fake.img?size=64MiB&fake=drop&real=1MiB", pipeline.MethodDigests, 1 << 20 / 512},
		{"sha256 fake card", "fake.img?size=64MiB&fake=drop&real=1MiB", pipeline.MethodSHA256, 1 << 20 / 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := drive.Parse("sim:" + filepath.Join(t.TempDir(), tc.card))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2, Verify: true, VerifyMethod: tc.method}}, []drive.Spec{spec})
			if len(res.Cards) != 1 {
				t.Fatalf("Run: %v, %d cards", err, len(res.Cards))
			}
			o := res.Cards[0]
			if tc.badLBA >= 0 {
				var ve *pipeline.VerifyError
				if !errors.As(err, &ve) || ve.Transfer || ve.HashOnly || ve.LBA != tc.badLBA || ve.Offset != tc.badLBA*512 || ve.Want != img[ve.Offset] {
					t.Fatalf("Run: %v, want the first bad byte at LBA %d", err, tc.badLBA)
				}
				return
			}
			if err != nil || !o.Verified() || o.Verify.Method != tc.method {
				t.Fatalf("Run: %v, verified %v", err, o.Verify)
			}
			if r := RecordOf(o, nil); r.Verify != tc.method.Report() {
				t.Errorf("the report's record says verify %q, want %q", r.Verify, tc.method.Report())
			}
			if sha := o.Write.SHA256 != ([32]byte{}); sha != (tc.method == pipeline.MethodSHA256) {
				t.Errorf("SHA-256 computed: %v, want it only with sha256", sha)
			}
			if digests := len(o.Write.Digests.List) > 0; digests == (tc.method == pipeline.MethodSHA256) {
				t.Errorf("digests recorded: %v, want them only without sha256", digests)
			}
			if got := o.Verify.Bytes; got < int64(len(img)) {
				t.Errorf("verified %d bytes of %d", got, len(img))
			}
		})
	}
	var me *pipeline.MethodError
	if _, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Engine: Engine{Verify: true, VerifyMethod: pipeline.MethodCompare}}, nil); !errors.As(err, &me) {
		t.Errorf("a write checked by compare: %v, want a *pipeline.MethodError", err)
	}
}

// TestRunVerifyReadSize: the read-back reads in pipeline.ReadBackSize
// commands unless the user chose a size, which it then keeps; a reader
// that takes the write's 1 MiB but fails larger commands is stepped down
// during the read-back and still verifies.
func TestRunVerifyReadSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := testpattern.Bytes(8<<20+700, 9) // 9 write commands, the last one block
	imagePath := filepath.Join(dir, "os.img")
	if err := os.WriteFile(imagePath, img, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, card string
		transfer   int    // Config.TransferSize: 0, or the user's, which the verify reads in too
		reads      int    // READ buffers filled
		note       string // a note the session must pass on
	}{
		{"default", "good.img?size=16MiB", 0, 3, ""},      // 4 MiB, 4 MiB, the last block
		{"chosen", "good.img?size=16MiB", 1 << 20, 9, ""}, // as the write
		{"chosen smaller", "good.img?size=16MiB", 512 << 10, 17, ""},
		{"chokes past 1 MiB", "choke.img?size=16MiB&choke=2048:stall&clock=virtual", 0, 3, "at most 120 KiB per command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := drive.Parse("sim:" + filepath.Join(t.TempDir(), tc.card))
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu    sync.Mutex // the session's goroutines report
				notes []string
			)
			obs := ObserverFunc(func(e Event) {
				if n, ok := e.(Note); ok {
					mu.Lock()
					notes = append(notes, n.Message)
					mu.Unlock()
				}
			})
			res, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Engine: Engine{TransferSize: tc.transfer, Buffers: 2, Verify: true}, Output: Output{Observer: obs}}, []drive.Spec{spec})
			if err != nil || len(res.Cards) != 1 || !res.Cards[0].Verified() {
				t.Fatalf("Run: %v, %+v", err, res.Cards)
			}
			v := res.Cards[0].Verify
			if v.Reads != tc.reads || v.Bytes != int64(len(img)) {
				t.Errorf("verify read %d bytes in %d reads, want %d in %d", v.Bytes, v.Reads, len(img), tc.reads)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.note != "" && !strings.Contains(strings.Join(notes, "\n"), tc.note) {
				t.Errorf("notes %q, want one saying %q", notes, tc.note)
			}
		})
	}
}

// TestRunBuffersForTheCard: with no buffer count given, the write's is
// the engine's for the transfer size the card takes, chosen once the card
// is open; a count given is kept.
func TestRunBuffersForTheCard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	imagePath := filepath.Join(dir, "os.img")
	if err := os.WriteFile(imagePath, testpattern.Bytes(1<<20, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		transfer, buffers int
		want              int // -1: the engine's for the size used
	}{
		{"large transfers", 64 << 20, 0, -1},
		{"large transfers, buffers given", 64 << 20, 3, 3},
		{"default", 0, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := drive.Parse("sim:" + filepath.Join(t.TempDir(), "c.img") + "?size=8MiB")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Targets: Targets{Force: true}, Engine: Engine{TransferSize: tc.transfer, Buffers: tc.buffers}}, []drive.Spec{spec})
			if err != nil {
				t.Fatal(err)
			}
			got, want := res.Cards[0].Write, tc.want
			if want < 0 {
				want = pipeline.BuffersFor(got.TransferSize)
			}
			if got.Buffers != want || got.TransferSize != cmp.Or(tc.transfer, pipeline.DefaultTransferSize) {
				t.Errorf("wrote with %d buffers of %d bytes, want %d", got.Buffers, got.TransferSize, want)
			}
		})
	}
}

// TestRunVerifyInterrupted: a stop during the verify of a write says the
// image was written in full and synced, and that only the check was cut
// short: an interruption, naming the card as it was given.
func TestRunVerifyInterrupted(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(8<<20, 4)
	imagePath := filepath.Join(t.TempDir(), "os.img")
	if err := os.WriteFile(imagePath, img, 0o644); err != nil {
		t.Fatal(err)
	}
	raw := "sim:" + filepath.Join(t.TempDir(), "c.img") + "?size=16MiB&speed=8MB/s"
	spec, err := drive.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := ObserverFunc(func(e Event) {
		if p, ok := e.(Progress); ok && p.Phase == pipeline.PhaseVerify && p.Done > 0 {
			cancel()
		}
	})
	// Progress is told a few times a second, so the read-back must last
	// longer than that for a report with Done > 0 to come before its end
	// (at 40 MB/s it took 0.2 s and the only such report was the last):
	// 8 MB/s makes it a second. In 256 KiB commands the stop asked then is
	// taken between two of them, long before the last.
	_, err = Run(ctx, Config{Image: image.Ref{Path: imagePath}, Engine: Engine{Verify: true, TransferSize: 256 << 10}, Output: Output{Observer: obs}}, []drive.Spec{spec})
	var vi *VerifyInterruptedError
	if !errors.As(err, &vi) || vi.Written != int64(len(img)) || vi.Target != raw || vi.Image != imagePath || failure.Of(err) != failure.Interrupted {
		t.Fatalf("Run = %v, want a *VerifyInterruptedError after %d bytes written", err, len(img))
	}
	if msg := err.Error(); !strings.Contains(msg, "was written in full (8.39 MB) and synced; its verify was interrupted") {
		t.Errorf("message %q", msg)
	}
}
