package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/lib/xxh3"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// writeDigests writes img with digests through a recordingDevice and
// checks that the digests describe exactly the commands that reached the
// card, but the zeroing one the held first transfer overwrote: the same
// ranges, and the xxh3-128 of what the card holds there.
func writeDigests(t *testing.T, mem blockdev.Device, img []byte, opts WriteOptions) WriteResult {
	t.Helper()
	rec := &recordingDevice{Device: mem}
	opts.Digests = true
	if opts.TransferSize == 0 {
		opts.TransferSize = testTransfer
	}
	res, err := Write(context.Background(), rec, bytes.NewReader(img), opts)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	cmds := rec.writes
	if len(img) > opts.TransferSize {
		// The first transfer was held back and written last, over the
		// zeros written first; its digest is still the first, LBA 0's.
		if len(cmds) < 3 || cmds[0].lba != 0 || !cmds[0].zeros || cmds[len(cmds)-1].lba != 0 {
			t.Fatalf("commands %v: want LBA 0 zeroed first and written last", cmds)
		}
		if res.Digests.List[0].LBA != 0 {
			t.Fatalf("first digest %+v, want LBA 0's", res.Digests.List[0])
		}
		cmds = cmds[1:] // the zeroing, overwritten by the held first transfer
	}
	var want []TransferDigest
	card := devContents(t, mem)
	for _, c := range cmds {
		p := card[c.lba*testBS : (c.lba+int64(c.blocks))*testBS]
		want = append(want, TransferDigest{LBA: c.lba, Blocks: int32(c.blocks), Sum: DigestOf(p)})
	}
	slices.SortFunc(want, func(a, b TransferDigest) int { return int(a.LBA - b.LBA) })
	if !slices.Equal(res.Digests.List, want) || res.Digests.BlockSize != testBS {
		t.Fatalf("digests %v\nwant the commands sent %v", res.Digests.List, want)
	}
	return res
}

// TestVerifyDigests: a byte that reads back wrong in any write command's
// range (the held first transfer, one in the middle, the last with its
// padding) is found, the range named at once without the image, and the
// byte once the image is decoded again; reads of other sizes than the
// write's find the same.
func TestVerifyDigests(t *testing.T) {
	const n = 6*testTransfer + 700 // the last transfer is short and ends mid-block
	for _, tc := range []struct {
		name     string
		size     int
		bad      int64 // byte that reads back wrong; -1 none
		transfer int   // the verify's read size
	}{
		{"intact", n, -1, testTransfer},
		{"intact, reads of 3 blocks", n, -1, 3 * testBS},
		{"intact, reads of 4 transfers", n, -1, 4 * testTransfer},
		{"intact, whole transfers", 4 * testTransfer, -1, testTransfer},
		{"intact, one byte", 1, -1, testTransfer},
		{"intact, empty", 0, -1, testTransfer},
		{"held first transfer, first byte", n, 0, testTransfer},
		{"held first transfer", n, 600, testTransfer},
		{"transfer 3, first byte", n, 3 * testTransfer, testTransfer},
		{"transfer 3", n, 3*testTransfer + 5*testBS + 7, testTransfer},
		{"transfer 3, reads of 3 blocks", n, 3*testTransfer + 5*testBS + 7, 3 * testBS},
		{"transfer 3, reads of 4 transfers", n, 3*testTransfer + 5*testBS + 7, 4 * testTransfer},
		{"last image byte", n, n - 1, testTransfer},
		{"image shorter than a transfer", 3*testBS + 9, 2*testBS + 1, testTransfer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := testImage(tc.size, 21)
			mem := newTestDevice(t, 2048, testBS, oldByte)
			res := writeDigests(t, mem, img, WriteOptions{ExpectedSize: int64(len(img))})
			dev := &flakyReadDevice{Device: mem, off: tc.bad, times: -1}
			var lastP Progress
			opts := VerifyOptions{Name: "sim:card", TransferSize: tc.transfer, Progress: func(p Progress) { lastP = p }}
			v, err := VerifyDigests(context.Background(), dev, res.Digests, opts)
			if tc.bad < 0 {
				if err != nil || v.Bytes != int64(tc.size) || v.Method != MethodDigests {
					t.Fatalf("VerifyDigests: %v, %d bytes (%s)", err, v.Bytes, v.Method)
				}
				// Image bytes, as a write counts them: the padding is
				// checked but not counted.
				if lastP.Phase != PhaseVerify || lastP.Done != int64(tc.size) || lastP.Total != int64(tc.size) {
					t.Errorf("last progress %+v, want %d of %d bytes", lastP, tc.size, tc.size)
				}
				return
			}
			first := tc.bad / testTransfer * testTransfer / testBS // the command's first block
			last := min(first+testTransfer/testBS, int64(roundUp(tc.size, testBS)/testBS)) - 1
			var ve *VerifyError
			if !errors.As(err, &ve) || !ve.Transfer || ve.LBA != first || ve.LBA+ve.Blocks-1 != last {
				t.Fatalf("err = %v, want a digest mismatch at LBA %d-%d", err, first, last)
			}
			if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("LBA %d-%d", first, last)) || !strings.Contains(msg, "sim:card") {
				t.Errorf("message %q does not name the device and the range", msg)
			}
			// The image decoded again, up to the range, names the byte.
			open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(img)), nil }
			err = LocateMismatch(context.Background(), dev, open, int64(len(img)), opts, err)
			if !errors.As(err, &ve) || ve.Transfer || ve.LBA != tc.bad/testBS || ve.Offset != tc.bad ||
				ve.Want != img[tc.bad] || ve.Got != img[tc.bad]^0x10 {
				t.Fatalf("LocateMismatch = %v, want byte %d (LBA %d)", err, tc.bad, tc.bad/testBS)
			}
		})
	}
}

// TestVerifyDigestsPadding: the zeros after the image's last byte were
// written too, so they are verified; the byte comparison with the image
// leaves them out, so LocateMismatch reads them itself.
func TestVerifyDigestsPadding(t *testing.T) {
	img := testImage(5*testTransfer+700, 4)
	mem := newTestDevice(t, 2048, testBS, oldByte)
	res := writeDigests(t, mem, img, WriteOptions{ExpectedSize: int64(len(img))})
	bad := int64(len(img)) + 10
	dev := &flakyReadDevice{Device: mem, off: bad, times: -1}
	opts := VerifyOptions{TransferSize: testTransfer}
	_, err := VerifyDigests(context.Background(), dev, res.Digests, opts)
	var ve *VerifyError
	if !errors.As(err, &ve) || !ve.Transfer || ve.LBA != 5*testTransfer/testBS {
		t.Fatalf("err = %v, want the last command's range", err)
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(img)), nil }
	err = LocateMismatch(context.Background(), dev, open, int64(len(img)), opts, err)
	if !errors.As(err, &ve) || ve.Transfer || ve.Offset != bad || ve.LBA != bad/testBS || ve.Want != 0 || ve.Got != 0x10 {
		t.Fatalf("LocateMismatch = %v, want the padding byte %d", err, bad)
	}
}

// TestVerifyDigestsBlockMap: with pieces, only the pieces are digested
// and read back; a difference outside them is no concern of the verify,
// one inside is found.
func TestVerifyDigestsBlockMap(t *testing.T) {
	img := testImage(8*testTransfer+300, 8)
	mapped := []blockdev.Extent{{Off: 0, Len: 100}, {Off: 2*testTransfer + 3*testBS, Len: 2*testBS + 5},
		{Off: 5*testTransfer - 10, Len: 20}, {Off: 8 * testTransfer, Len: 300}}
	pieces := func(off int64, p []byte, into []blockdev.Extent) []blockdev.Extent {
		for _, e := range mapped {
			lo, hi := max(e.Off, off), min(e.End(), off+int64(len(p)))
			if lo < hi {
				into = append(into, blockdev.Extent{Off: lo, Len: hi - lo})
			}
		}
		return into
	}
	for _, tc := range []struct {
		name string
		bad  int64
		want int64 // first LBA of the range named; -1: verifies
	}{
		{"intact", -1, -1},
		{"outside the map", 4 * testTransfer, -1},
		{"in a piece", 2*testTransfer + 4*testBS + 1, (2*testTransfer + 3*testBS) / testBS},
		{"in a piece across transfers", 5 * testTransfer, 5 * testTransfer / testBS},
		{"in the first transfer", 50, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newTestDevice(t, 2048, testBS, oldByte)
			res := writeDigests(t, mem, img, WriteOptions{ExpectedSize: int64(len(img)), Pieces: pieces})
			dev := &flakyReadDevice{Device: mem, off: tc.bad, times: -1}
			v, err := VerifyDigests(context.Background(), dev, res.Digests, VerifyOptions{TransferSize: testTransfer})
			if tc.want < 0 {
				if err != nil || v.Bytes != extentsLen(res.Written) || v.Bytes >= int64(len(img)) {
					t.Fatalf("VerifyDigests: %v, %d bytes of the %d written", err, v.Bytes, extentsLen(res.Written))
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) || !ve.Transfer || ve.LBA != tc.want {
				t.Fatalf("err = %v, want a mismatch in the range at LBA %d", err, tc.want)
			}
		})
	}
}

// TestVerifyDigestsInconsistent: a range that read wrong once and right
// the second time is the reader's inconsistency, not a bad card, and it
// is told without the image.
func TestVerifyDigestsInconsistent(t *testing.T) {
	img := testImage(6*testTransfer, 5)
	mem := newTestDevice(t, 2048, testBS, oldByte)
	res := writeDigests(t, mem, img, WriteOptions{ExpectedSize: int64(len(img))})
	dev := &flakyReadDevice{Device: mem, off: 4*testTransfer + 3, times: 1}
	_, err := VerifyDigests(context.Background(), dev, res.Digests, VerifyOptions{TransferSize: testTransfer})
	var ie *InconsistentError
	var ve *VerifyError
	if !errors.As(err, &ie) || !ie.Reread || !errors.As(err, &ve) || !ve.Transfer || !strings.Contains(err.Error(), "inconsistent data") {
		t.Fatalf("err = %v, want an *InconsistentError from the second read", err)
	}
	opened := 0
	open := func() (io.ReadCloser, error) { opened++; return io.NopCloser(bytes.NewReader(img)), nil }
	if got := LocateMismatch(context.Background(), dev, open, int64(len(img)), VerifyOptions{}, err); got != err || opened != 0 {
		t.Errorf("LocateMismatch = %v (image opened %d times), want the inconsistency unchanged", got, opened)
	}
}

// TestVerifyDigestsImageGone: a mismatch whose image cannot be decoded
// again (standard input) still names the range, and why it is no closer.
func TestVerifyDigestsImageGone(t *testing.T) {
	img := testImage(6*testTransfer, 5)
	mem := newTestDevice(t, 2048, testBS, oldByte)
	res := writeDigests(t, mem, img, WriteOptions{ExpectedSize: int64(len(img))})
	dev := &flakyReadDevice{Device: mem, off: 2*testTransfer + 3, times: -1}
	_, err := VerifyDigests(context.Background(), dev, res.Digests, VerifyOptions{TransferSize: testTransfer})
	open := func() (io.ReadCloser, error) { return nil, errors.New("standard input") }
	err = LocateMismatch(context.Background(), dev, open, int64(len(img)), VerifyOptions{}, err)
	var ve *VerifyError
	if !errors.As(err, &ve) || !ve.Transfer || ve.LBA != 2*testTransfer/testBS || !strings.Contains(err.Error(), "standard input") {
		t.Fatalf("err = %v, want the range and why it was not located", err)
	}
}

// cancelOnReadDevice cancels the verify's context when a read starts at
// LBA at; the read itself completes.
type cancelOnReadDevice struct {
	blockdev.Device
	at     int64
	cancel context.CancelFunc
}

func (d *cancelOnReadDevice) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	if lba == d.at {
		d.cancel()
	}
	return d.Device.ReadBlocks(ctx, lba, p)
}

func TestVerifyDigestsCancel(t *testing.T) {
	img := testImage(16*testTransfer, 6)
	mem := newTestDevice(t, 2048, testBS, oldByte)
	res := writeDigests(t, mem, img, WriteOptions{ExpectedSize: int64(len(img))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dev := &cancelOnReadDevice{Device: mem, at: 5 * testTransfer / testBS, cancel: cancel}
	_, err := VerifyDigests(ctx, dev, res.Digests, VerifyOptions{TransferSize: testTransfer})
	var ce *CancelledError
	if !errors.As(err, &ce) || ce.Phase != PhaseVerify || !errors.Is(err, context.Canceled) || ce.Bytes > 6*testTransfer {
		t.Fatalf("err = %v, want the verify cancelled near transfer 5", err)
	}
}

// TestVerifyDigestsWrongDevice: digests of another block size are refused
// before anything is read.
func TestVerifyDigestsWrongDevice(t *testing.T) {
	d := Digests{BlockSize: 4096, List: []TransferDigest{{LBA: 0, Blocks: 1}}}
	dev := newTestDevice(t, 64, testBS, oldByte)
	if _, err := VerifyDigests(context.Background(), dev, d, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "4096") {
		t.Fatalf("err = %v, want the block sizes named", err)
	}
}

// TestDigestImplementationsAgree: every xxh3 implementation this CPU runs
// gives the digest the write records and the read-back checks, for every
// size a command or a piece of one may have (a block, a stepped-down
// command, a whole transfer, a range spread over reads), whole and in
// pieces, so which one a process chose cannot make a good card fail.
func TestDigestImplementationsAgree(t *testing.T) {
	data := testImage(4<<20+3*testBS, 11)
	var sizes []int
	for _, n := range []int{testBS, 8 * testBS, 32 << 10, 64 << 10, 120 << 10, 1 << 20, 4 << 20} {
		sizes = append(sizes, n, n+testBS)
	}
	for n := 1; n < 5000; n = n*3 + 1 {
		sizes = append(sizes, n)
	}
	cands := xxh3.Accums()
	if len(cands) < 2 && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		t.Fatalf("only %d implementation on %s: nothing to choose between", len(cands), runtime.GOARCH)
	}
	for _, n := range sizes {
		p := data[:n]
		want := DigestOf(p)
		for _, a := range cands {
			if got := a.Hash128(p).Bytes(); got != want {
				t.Errorf("%d bytes: %s gives %x, the chosen %s %x", n, a.Name(), got, digestAccum().Name(), want)
			}
			h := a.New128()
			for q := p; len(q) > 0; q = q[min(len(q), 3*testBS+5):] {
				h.Write(q[:min(len(q), 3*testBS+5)])
			}
			if got := h.Sum128().Bytes(); got != want {
				t.Errorf("%d bytes in pieces: %s gives %x, want %x", n, a.Name(), got, want)
			}
		}
	}
}

// TestDigestChoice: the implementation is chosen by timing each candidate
// a few rounds on a 64 KiB block and taking the fastest, once however
// many goroutines ask at once; and the process's own choice is one of
// this CPU's.
func TestDigestChoice(t *testing.T) {
	// Three candidates, whatever this CPU runs: timed in turn, so the
	// n-th timing of a round is the n-th candidate's.
	cands := append(xxh3.Accums(), xxh3.Scalar, xxh3.Scalar)[:3]
	// The second candidate is the fastest; the first is fast once.
	cost := func(i, round int) time.Duration {
		d := time.Duration(10+i) * time.Millisecond
		if i == 1 {
			d = 5 * time.Millisecond
		}
		if i == 0 && round == 2 {
			d = time.Millisecond // a lucky round counts: the best of each
		}
		return d
	}
	for _, tc := range []struct {
		name string
		cost func(i, round int) time.Duration
		want int
	}{
		{"the best round of each decides", cost, 0},
		{"the fastest wins", func(i, _ int) time.Duration { return cost(i, 0) }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			c := &accumChoice{
				candidates: func() []xxh3.Accum { return cands },
				timing: func(a xxh3.Accum, block []byte) time.Duration {
					if len(block) != choiceBlock {
						t.Errorf("timed on %d bytes, want %d", len(block), choiceBlock)
					}
					mu.Lock()
					defer mu.Unlock()
					i, round := calls%len(cands), calls/len(cands)
					calls++
					if a.Name() != cands[i].Name() {
						t.Errorf("timing %d is %s, want candidate %d (%s)", calls, a.Name(), i, cands[i].Name())
					}
					return tc.cost(i, round)
				},
			}
			var wg sync.WaitGroup
			got := make([]int, 8)
			for g := range got {
				wg.Add(1)
				go func() { defer wg.Done(); c.get(); got[g] = c.chosenIndex }()
			}
			wg.Wait()
			for _, i := range got {
				if i != tc.want {
					t.Errorf("chose candidate %d, want %d", i, tc.want)
				}
			}
			if n := int(c.timed.Load()); n != choiceRounds*len(cands) {
				t.Errorf("%d timings, want %d: one choice of %d rounds", n, choiceRounds*len(cands), choiceRounds)
			}
			c.get()
			if n := int(c.timed.Load()); n != choiceRounds*len(cands) {
				t.Errorf("asked again, the choice was timed again (%d timings)", n)
			}
		})
	}
	own := digestAccum().Name()
	found := false
	for _, a := range xxh3.Accums() {
		found = found || a.Name() == own
	}
	if !found || digestChoice.timed.Load() != int32(choiceRounds*len(xxh3.Accums())) {
		t.Errorf("the process chose %s of %d timings: not one of this CPU's implementations, or not once", own, digestChoice.timed.Load())
	}
}
