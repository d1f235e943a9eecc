package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

const (
	testBS       = 512
	testTransfer = 8 * 1024 // 16 blocks: small, so images span many transfers
	oldByte      = 0xAA     // what the medium held before the write
)

func TestWriteRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 511, 512, 513, testTransfer, testTransfer + 1,
		5*testTransfer + 777, 4 * testTransfer, 1000*testBS + 3}
	for _, size := range sizes {
		for _, known := range []bool{true, false} {
			for _, buffers := range []int{2, 3} {
				name := fmt.Sprintf("%d/known=%v/buffers=%d", size, known, buffers)
				t.Run(name, func(t *testing.T) {
					img := testImage(size, byte(size))
					rec := &recordingDevice{Device: newTestDevice(t, 2048, testBS, oldByte)}
					opts := WriteOptions{TransferSize: testTransfer, Buffers: buffers, ExpectedSize: -1, Sync: true}
					if known {
						opts.ExpectedSize = int64(size)
					}
					res, err := Write(context.Background(), rec, bytes.NewReader(img), opts)
					if err != nil {
						t.Fatalf("Write: %v", err)
					}
					padded := roundUp(size, testBS)
					got := devContents(t, rec)
					if !bytes.Equal(got[:size], img) {
						t.Fatalf("image bytes differ on the device")
					}
					if !isZero(got[size:padded]) {
						t.Errorf("tail padding %d..%d is not zero", size, padded)
					}
					for i := padded; i < len(got); i++ {
						if got[i] != oldByte {
							t.Fatalf("byte %d past the image was touched", i)
						}
					}
					want := sha256.Sum256(img)
					if res.SHA256 != want || res.Bytes != int64(size) || res.BytesWritten != int64(padded) ||
						res.Blocks != int64(padded/testBS) {
						t.Errorf("result %+v, want %d bytes, %d written, hash %x", res, size, padded, want[:4])
					}
					checkCommandOrder(t, rec, size, size > testTransfer || (size == testTransfer && !known))
				})
			}
		}
	}
}

// checkCommandOrder asserts the write discipline: every command starts on
// a transfer boundary and is at most one transfer; when the writer cannot
// tell from the first buffer that the image ends there (zeroed), it starts
// with one zero write over the first region; the first transfer is written
// last; then one sync.
func checkCommandOrder(t *testing.T, rec *recordingDevice, size int, zeroed bool) {
	t.Helper()
	per := testTransfer / testBS
	for _, c := range rec.writes {
		if c.lba%int64(per) != 0 || c.blocks > per {
			t.Errorf("writeCmd at LBA %d of %d blocks is not one aligned transfer", c.lba, c.blocks)
		}
	}
	if size == 0 {
		if len(rec.writes) != 0 {
			t.Errorf("empty image issued %d writes", len(rec.writes))
		}
	} else {
		last := rec.writes[len(rec.writes)-1]
		if last.lba != 0 {
			t.Errorf("last write at LBA %d, want the first transfer at 0", last.lba)
		}
		if zeroed && !(rec.writes[0].lba == 0 && rec.writes[0].zeros && rec.writes[0].blocks == per) {
			t.Errorf("first write %+v, want zeros over the first transfer", rec.writes[0])
		}
		if wantCmds := (size+testTransfer-1)/testTransfer + boolInt(zeroed); len(rec.writes) != wantCmds {
			t.Errorf("%d writes, want %d", len(rec.writes), wantCmds)
		}
	}
	if rec.syncs != 1 {
		t.Errorf("%d syncs, want 1", rec.syncs)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestWriteRefusesTooLargeImage(t *testing.T) {
	rec := &recordingDevice{Device: newTestDevice(t, 64, testBS, oldByte)}
	before := deviceHash(t, rec)
	img := testImage(64*testBS+1, 1)
	_, err := Write(context.Background(), rec, bytes.NewReader(img),
		WriteOptions{Name: "sim:card", TransferSize: testTransfer, ExpectedSize: int64(len(img))})
	var ce *blockdev.CapacityError
	if !errors.As(err, &ce) || ce.ImageSize != int64(len(img)) || ce.Capacity != 64*testBS {
		t.Fatalf("err = %v, want *blockdev.CapacityError for %d bytes on %d", err, len(img), 64*testBS)
	}
	if msg := err.Error(); !strings.Contains(msg, "sim:card") || !strings.Contains(msg, "nothing was written") {
		t.Errorf("message %q does not name the device and say nothing was written", msg)
	}
	if len(rec.writes) != 0 || deviceHash(t, rec) != before {
		t.Errorf("the medium was touched: %d writes", len(rec.writes))
	}
}

func TestWriteUnknownSizePastCapacity(t *testing.T) {
	for _, tc := range []struct {
		name        string
		blocks      int64
		imageBlocks int // image size in blocks (plus extra bytes)
		extra       int
		wantErr     bool
	}{
		{"exactly fits, transfer multiple", 64, 64, 0, false},
		{"exactly fits, ragged end", 70, 70, 0, false},
		{"one byte over", 64, 64, 1, true},
		{"one block over, ragged capacity", 70, 71, 0, true},
		{"far over", 64, 400, 5, true},
		{"smaller than one transfer", 10, 10, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingDevice{Device: newTestDevice(t, tc.blocks, testBS, oldByte)}
			capacity := tc.blocks * testBS
			img := testImage(tc.imageBlocks*testBS+tc.extra, 2)
			_, err := Write(context.Background(), rec, bytes.NewReader(img),
				WriteOptions{TransferSize: testTransfer, ExpectedSize: -1})
			for _, c := range rec.writes {
				if c.lba+int64(c.blocks) > tc.blocks {
					t.Fatalf("write at LBA %d+%d goes past the %d-block medium", c.lba, c.blocks, tc.blocks)
				}
			}
			got := devContents(t, rec)
			if !tc.wantErr {
				if err != nil || !bytes.Equal(got, img) {
					t.Fatalf("err = %v, equal = %v", err, bytes.Equal(got, img))
				}
				return
			}
			var ce *blockdev.CapacityError
			if !errors.As(err, &ce) || ce.ImageSize != -1 || ce.Capacity != capacity {
				t.Fatalf("err = %v, want *blockdev.CapacityError with unknown image size", err)
			}
			first := min(int64(testTransfer), capacity)
			if capacity > testTransfer && !isZero(got[:first]) {
				t.Errorf("first transfer is not zeroed after stopping at the capacity")
			}
			if capacity > testTransfer && !bytes.Equal(got[first:], img[first:capacity]) {
				t.Errorf("the image up to the capacity was not written")
			}
		})
	}
}

// TestWriteCancelled cancels the context as write number k is about to be
// sent; the write must finish that writeCmd, sync and stop.
func TestWriteCancelled(t *testing.T) {
	per := int64(testTransfer / testBS)
	for _, tc := range []struct {
		k     int
		known bool
	}{{0, false}, {1, false}, {3, false}, {0, true}, {1, true}, {3, true}} {
		k := tc.k
		t.Run(fmt.Sprintf("after%d/known=%v", k, tc.known), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rec := &recordingDevice{Device: newTestDevice(t, 2048, testBS, oldByte)}
			rec.beforeWrite = func(n int, lba int64) error {
				if n == k {
					cancel()
				}
				return nil
			}
			img := testImage(10*testTransfer, 3)
			opts := WriteOptions{TransferSize: testTransfer, Buffers: 2, ExpectedSize: -1}
			if tc.known {
				opts.ExpectedSize = int64(len(img)) // the zeroing write goes first, before any decoding
			}
			_, err := Write(ctx, rec, bytes.NewReader(img), opts)
			var ce *CancelledError
			if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want *CancelledError wrapping context.Canceled", err)
			}
			// Writes 0..k ran (0 is the zeroing one); streamed = k transfers.
			if len(rec.writes) != k+1 {
				t.Fatalf("%d writes after cancelling at write %d", len(rec.writes), k)
			}
			if want := int64(k) * testTransfer; ce.Bytes != want || ce.LBA != per*int64(k+1) {
				t.Errorf("CancelledError{Bytes %d, LBA %d}, want {%d, %d}", ce.Bytes, ce.LBA, want, per*int64(k+1))
			}
			got := devContents(t, rec)
			if !isZero(got[:testTransfer]) {
				t.Errorf("LBA 0 region holds old or new data, want zeros")
			}
			end := ce.LBA * testBS
			if !bytes.Equal(got[testTransfer:end], img[testTransfer:end]) {
				t.Errorf("streamed region differs from the image")
			}
			if got[end] != oldByte {
				t.Errorf("written past LBA %d", ce.LBA)
			}
			if rec.syncs != 1 {
				t.Errorf("%d syncs after cancel, want 1", rec.syncs)
			}
		})
	}
}

func TestWriteCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := &recordingDevice{Device: newTestDevice(t, 64, testBS, oldByte)}
	_, err := Write(ctx, rec, bytes.NewReader(testImage(4096, 1)), WriteOptions{})
	if !errors.Is(err, context.Canceled) || len(rec.writes) != 0 {
		t.Fatalf("err = %v, %d writes", err, len(rec.writes))
	}
}

type devFault struct{ sense string }

func (e *devFault) Error() string { return "MEDIUM ERROR " + e.sense }

func TestWriteDeviceFault(t *testing.T) {
	per := int64(testTransfer / testBS)
	for _, tc := range []struct {
		at      int   // failing write
		wantLBA int64 // its LBA
	}{
		{0, 0},       // the zeroing write
		{1, per},     // first streamed transfer
		{4, 4 * per}, // later
		{10, 0},      // the first transfer, written last
		{9, 9 * per}, // the ragged tail
	} {
		t.Run(fmt.Sprint(tc.at), func(t *testing.T) {
			rec := &recordingDevice{Device: newTestDevice(t, 2048, testBS, oldByte)}
			rec.beforeWrite = func(n int, lba int64) error {
				if n == tc.at {
					return &devFault{"3/11/00"}
				}
				return nil
			}
			img := testImage(9*testTransfer+1000, 4)
			_, err := Write(context.Background(), rec, bytes.NewReader(img), WriteOptions{TransferSize: testTransfer, ExpectedSize: int64(len(img))})
			var de *DeviceError
			var fe *devFault
			if !errors.As(err, &de) || !errors.As(err, &fe) {
				t.Fatalf("err = %v, want *DeviceError wrapping the device's error", err)
			}
			if de.Op != "write" || de.LBA != tc.wantLBA {
				t.Errorf("DeviceError{%s, LBA %d}, want write at %d", de.Op, de.LBA, tc.wantLBA)
			}
			if !strings.Contains(err.Error(), "LBA "+fmt.Sprint(int(tc.wantLBA))+"-") {
				t.Errorf("message %q does not name the LBA range", err)
			}
			if len(rec.writes) != tc.at+1 {
				t.Errorf("%d writes after a fault at %d", len(rec.writes), tc.at)
			}
		})
	}
}

type imgErr struct{ at int64 }

func (e *imgErr) Error() string { return "corrupt block" }

type failAfterReader struct {
	r   io.Reader
	n   int64
	err error
}

func (f *failAfterReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	m, err := f.r.Read(p)
	f.n -= int64(m)
	return m, err
}

func TestWriteSourceError(t *testing.T) {
	for _, at := range []int64{0, 100, testTransfer, 3*testTransfer + 5} {
		// io.ErrUnexpectedEOF from a source (a truncated archive) is its
		// error, not the end of a short last buffer.
		for _, srcErr := range []error{&imgErr{at}, io.ErrUnexpectedEOF} {
			t.Run(fmt.Sprint(int(at))+"/"+srcErr.Error(), func(t *testing.T) {
				rec := &recordingDevice{Device: newTestDevice(t, 2048, testBS, oldByte)}
				src := &failAfterReader{r: bytes.NewReader(testImage(10*testTransfer, 5)), n: at, err: srcErr}
				_, err := Write(context.Background(), rec, src, WriteOptions{TransferSize: testTransfer, ExpectedSize: -1})
				var se *imgErr
				if !errors.Is(err, srcErr) || (srcErr != io.ErrUnexpectedEOF && (!errors.As(err, &se) || se.at != at)) {
					t.Fatalf("err = %v, want the source's error", err)
				}
				if !strings.Contains(err.Error(), "byte offset "+fmt.Sprint(int(at))) {
					t.Errorf("message %q does not say where the image failed", err)
				}
				got := devContents(t, rec)
				if !isZero(got[:testTransfer]) && at >= testTransfer {
					t.Errorf("first transfer written after a source error")
				}
				if rec.writes != nil && rec.writes[len(rec.writes)-1].lba == 0 && !rec.writes[len(rec.writes)-1].zeros {
					t.Errorf("the held first transfer was written after a source error")
				}
			})
		}
	}
}

func TestWriteDeclaredSizeMismatch(t *testing.T) {
	for _, tc := range []struct {
		actual, declared int
		longer           bool
	}{
		{3 * testTransfer, 3*testTransfer + 1, false},
		{3*testTransfer + 1, 3 * testTransfer, true},
		{100, 50, true},
	} {
		rec := &recordingDevice{Device: newTestDevice(t, 2048, testBS, oldByte)}
		_, err := Write(context.Background(), rec, bytes.NewReader(testImage(tc.actual, 6)),
			WriteOptions{TransferSize: testTransfer, ExpectedSize: int64(tc.declared)})
		var se *ImageSizeError
		if !errors.As(err, &se) || se.Longer != tc.longer {
			t.Errorf("%d bytes declared %d: err = %v", tc.actual, tc.declared, err)
		}
		if got := devContents(t, rec); tc.actual > testTransfer && !isZero(got[:testTransfer]) {
			t.Errorf("%d bytes declared %d: first transfer written", tc.actual, tc.declared)
		}
	}
}

func TestWriteOptionErrors(t *testing.T) {
	for _, o := range []WriteOptions{
		{TransferSize: 100},
		{TransferSize: 513},
		{TransferSize: -512},
		{Buffers: 1},
		{HashAlg: "md5"},
		{TransferSize: 1 << 30, Buffers: 2},      // 4 GiB: would die out of memory
		{TransferSize: 1 << 20, Buffers: 100000}, // likewise
	} {
		rec := &recordingDevice{Device: newTestDevice(t, 64, testBS, oldByte)}
		if _, err := Write(context.Background(), rec, bytes.NewReader(nil), o); err == nil || len(rec.writes) != 0 {
			t.Errorf("%+v: err = %v, %d writes", o, err, len(rec.writes))
		}
	}
}

func TestWriteSmallReadsAndNoHash(t *testing.T) {
	img := testImage(7*testTransfer+3, 7)
	dev := newTestDevice(t, 2048, testBS, oldByte)
	res, err := Write(context.Background(), dev, iotest.HalfReader(iotest.OneByteReader(bytes.NewReader(img))),
		WriteOptions{TransferSize: testTransfer, HashAlg: HashNone})
	if err != nil || res.SHA256 != ([32]byte{}) || !bytes.Equal(devContents(t, dev)[:len(img)], img) {
		t.Fatalf("err = %v, hash %x", err, res.SHA256[:4])
	}
}

func TestWriteProgress(t *testing.T) {
	img := testImage(20*testTransfer, 8)
	var got []Progress
	_, err := Write(context.Background(), newTestDevice(t, 2048, testBS, oldByte), bytes.NewReader(img),
		WriteOptions{TransferSize: testTransfer, ExpectedSize: int64(len(img)), Sync: true,
			Progress: func(p Progress) { got = append(got, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 {
		t.Fatalf("%d progress calls: %+v", len(got), got)
	}
	first, last := got[0], got[len(got)-1]
	beforeSync := got[len(got)-2]
	if first.Phase != PhaseWrite || first.Done != 0 || first.Total != int64(len(img)) {
		t.Errorf("first progress %+v", first)
	}
	if beforeSync.Phase != PhaseWrite || beforeSync.Done != int64(len(img)) {
		t.Errorf("last write progress %+v, want all bytes done", beforeSync)
	}
	if last.Phase != PhaseSync {
		t.Errorf("last progress %+v, want the sync phase", last)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Phase == got[i-1].Phase && got[i].Done < got[i-1].Done {
			t.Errorf("progress went backwards: %+v then %+v", got[i-1], got[i])
		}
	}
}

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		dec, dev time.Duration
		side     Bound
		ratio    float64
	}{
		{3 * time.Second, time.Second, "decoder", 3},
		{time.Second, 2 * time.Second, "device", 2},
		{time.Second, time.Second, "device", 1},
		{0, time.Second, "device", 0},
	} {
		side, ratio := bound(tc.dec, tc.dev)
		if side != tc.side || ratio != tc.ratio {
			t.Errorf("bound(%v, %v) = %s %.2f, want %s %.2f", tc.dec, tc.dev, side, ratio, tc.side, tc.ratio)
		}
	}
}

// cancellingReader cancels the write from the decoder side, as Ctrl-C
// arriving while the writer waits for data would.
type cancellingReader struct {
	r      io.Reader
	reads  int
	at     int
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	if c.reads++; c.reads == c.at {
		c.cancel()
	}
	return c.r.Read(p)
}

func TestWriteCancelledByDecoderSide(t *testing.T) {
	for _, at := range []int{1, 2, 5} {
		ctx, cancel := context.WithCancel(context.Background())
		rec := &recordingDevice{Device: newTestDevice(t, 2048, testBS, oldByte)}
		img := testImage(20*testTransfer, 11)
		src := &cancellingReader{r: iotest.HalfReader(bytes.NewReader(img)), at: at, cancel: cancel}
		_, err := Write(ctx, rec, src, WriteOptions{TransferSize: testTransfer, ExpectedSize: -1})
		cancel()
		var ce *CancelledError
		if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancel at read %d: err = %v", at, err)
		}
		if got := devContents(t, rec); !isZero(got[:testTransfer]) && len(rec.writes) > 0 {
			t.Errorf("cancel at read %d: first region not zero", at)
		}
		for _, c := range rec.writes {
			if c.lba == 0 && !c.zeros {
				t.Errorf("cancel at read %d: the first transfer was written", at)
			}
		}
	}
}

// TestWriteBeforeFirst: a check of the whole image that fails once the
// stream ended stops the write before the held first transfer, which stays
// zeroed; one that passes writes it last, as always.
func TestWriteBeforeFirst(t *testing.T) {
	img := testImage(6*testTransfer+100, 5)
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("fail=", fail), func(t *testing.T) {
			rec := &recordingDevice{Device: newTestDevice(t, 2048, testBS, oldByte)}
			checked := 0
			check := errors.New("the image file changed while it was read")
			_, err := Write(context.Background(), rec, bytes.NewReader(img), WriteOptions{TransferSize: testTransfer, ExpectedSize: int64(len(img)),
				BeforeFirst: func() error {
					checked++
					if len(rec.writes) == 0 || rec.writes[len(rec.writes)-1].lba == 0 {
						t.Error("BeforeFirst ran before the stream was written")
					}
					if fail {
						return check
					}
					return nil
				}})
			got := devContents(t, rec)
			var ce *ImageCheckError
			switch {
			case checked != 1:
				t.Errorf("BeforeFirst ran %d times", checked)
			case fail && (!errors.As(err, &ce) || !errors.Is(err, check)):
				t.Errorf("err = %v, want an *ImageCheckError wrapping the check's", err)
			case fail && !isZero(got[:testTransfer]):
				t.Error("the first transfer was written after the check failed")
			case fail && !bytes.Equal(got[testTransfer:len(img)], img[testTransfer:]):
				t.Error("the rest of the image was not written")
			case !fail && (err != nil || !bytes.Equal(got[:len(img)], img)):
				t.Errorf("err = %v, image written %v", err, bytes.Equal(got[:len(img)], img))
			}
		})
	}
}
