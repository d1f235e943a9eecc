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

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// writeImage writes img with Write and fails the test on error.
func writeImage(t *testing.T, dev blockdev.Device, img []byte) WriteResult {
	t.Helper()
	res, err := Write(context.Background(), dev, bytes.NewReader(img),
		WriteOptions{TransferSize: testTransfer, ExpectedSize: int64(len(img))})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return res
}

// corrupt flips one byte on the device at off, through the seam.
func corrupt(t *testing.T, dev blockdev.Device, off int64) {
	t.Helper()
	bs := int64(dev.BlockSize())
	blk := make([]byte, bs)
	ctx := context.Background()
	if err := dev.ReadBlocks(ctx, off/bs, blk); err != nil {
		t.Fatal(err)
	}
	blk[off%bs] ^= 0x40
	if err := dev.WriteBlocks(ctx, off/bs, blk); err != nil {
		t.Fatal(err)
	}
}

func TestVerify(t *testing.T) {
	const n = 6*testTransfer + 700
	for _, tc := range []struct {
		name    string
		size    int // image length
		corrupt int64
		unknown bool // pass size -1
	}{
		{"intact", n, -1, false},
		{"intact unknown size", n, -1, true},
		{"empty", 0, -1, false},
		{"one byte", 1, -1, true},
		{"first byte", n, 0, false},
		{"in the first transfer", n, 600, false},
		{"transfer boundary", n, 3 * testTransfer, false},
		{"last byte of a transfer", n, 3*testTransfer - 1, true},
		{"last image byte", n, n - 1, false},
		{"last image byte unknown size", n, n - 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := testImage(tc.size, 9)
			dev := newTestDevice(t, 2048, testBS, oldByte)
			wres := writeImage(t, dev, img)
			if tc.corrupt >= 0 {
				corrupt(t, dev, tc.corrupt)
			}
			size := int64(tc.size)
			if tc.unknown {
				size = -1
			}
			res, err := Verify(context.Background(), dev, bytes.NewReader(img), size, VerifyOptions{TransferSize: testTransfer})
			hres, herr := VerifyHash(context.Background(), dev, int64(tc.size), wres.SHA256, VerifyOptions{TransferSize: testTransfer})
			if tc.corrupt < 0 {
				if err != nil || herr != nil || res.Bytes != int64(tc.size) || hres.Bytes != int64(tc.size) {
					t.Fatalf("Verify: %v (%d bytes); VerifyHash: %v (%d bytes)", err, res.Bytes, herr, hres.Bytes)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.HashOnly || ve.Offset != tc.corrupt || ve.LBA != tc.corrupt/testBS ||
				ve.Want != img[tc.corrupt] || ve.Got != img[tc.corrupt]^0x40 {
				t.Fatalf("Verify err = %v, want first difference at byte %d", err, tc.corrupt)
			}
			if !errors.As(herr, &ve) || !ve.HashOnly || ve.GotHash == wres.SHA256 {
				t.Fatalf("VerifyHash err = %v, want a hash mismatch", herr)
			}
		})
	}
}

func TestVerifyImageLargerThanMedium(t *testing.T) {
	dev := newTestDevice(t, 16, testBS, oldByte)
	img := testImage(16*testBS+1, 3)
	for _, size := range []int64{int64(len(img)), -1} {
		// The medium holds the image's first 16 blocks, so only the extra
		// byte can give it away.
		if err := dev.WriteBlocks(context.Background(), 0, img[:16*testBS]); err != nil {
			t.Fatal(err)
		}
		_, err := Verify(context.Background(), dev, bytes.NewReader(img), size, VerifyOptions{TransferSize: 4 * testBS})
		var ce *blockdev.CapacityError
		if !errors.As(err, &ce) {
			t.Errorf("size %d: err = %v, want *blockdev.CapacityError", size, err)
		}
	}
}

func TestVerifyImageShorterThanDeclared(t *testing.T) {
	dev := newTestDevice(t, 64, testBS, oldByte)
	img := testImage(10*testBS, 3)
	writeImage(t, dev, img)
	_, err := Verify(context.Background(), dev, bytes.NewReader(img[:len(img)-1]), int64(len(img)), VerifyOptions{TransferSize: 4 * testBS})
	var se *ImageSizeError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *ImageSizeError", err)
	}
}

// readFaultDevice fails ReadBlocks that touch the block bad.
type readFaultDevice struct {
	blockdev.Device
	bad int64
}

func (d *readFaultDevice) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	if d.bad >= lba && d.bad < lba+int64(len(p)/d.BlockSize()) {
		return &devFault{"3/11/00"}
	}
	return d.Device.ReadBlocks(ctx, lba, p)
}

func TestVerifyReadFault(t *testing.T) {
	img := testImage(8*testTransfer, 4)
	mem := newTestDevice(t, 2048, testBS, oldByte)
	res := writeImage(t, mem, img)
	dev := &readFaultDevice{Device: mem, bad: 3*testTransfer/testBS + 2}
	want := int64(3 * testTransfer / testBS) // the command's first block
	_, err := Verify(context.Background(), dev, bytes.NewReader(img), int64(len(img)), VerifyOptions{TransferSize: testTransfer})
	_, herr := VerifyHash(context.Background(), dev, int64(len(img)), res.SHA256, VerifyOptions{TransferSize: testTransfer})
	for _, err := range []error{err, herr} {
		var de *DeviceError
		if !errors.As(err, &de) || de.Op != "read" || de.LBA != want || !errors.As(err, new(*devFault)) {
			t.Errorf("err = %v, want a read DeviceError at LBA %d", err, want)
		}
	}
}

func TestVerifyCancelled(t *testing.T) {
	img := testImage(8*testTransfer, 4)
	mem := newTestDevice(t, 2048, testBS, oldByte)
	writeImage(t, mem, img)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	_, err := Verify(ctx, mem, bytes.NewReader(img), int64(len(img)), VerifyOptions{
		TransferSize: testTransfer,
		Progress: func(p Progress) {
			if calls++; calls == 1 {
				cancel() // at the start of the phase
			}
		},
	})
	var ce *CancelledError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) || ce.Phase != PhaseVerify {
		t.Fatalf("err = %v, want a verify CancelledError", err)
	}
}

func TestVerifyProgress(t *testing.T) {
	img := testImage(8*testTransfer, 4)
	dev := newTestDevice(t, 2048, testBS, oldByte)
	writeImage(t, dev, img)
	var got []Progress
	want := sha256.Sum256(img)
	if _, err := VerifyHash(context.Background(), dev, int64(len(img)), want, VerifyOptions{
		TransferSize: testTransfer, Progress: func(p Progress) { got = append(got, p) },
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || got[0].Phase != PhaseVerify || got[0].Done != 0 ||
		got[len(got)-1].Done != int64(len(img)) || got[len(got)-1].Total != int64(len(img)) {
		t.Errorf("progress %s", fmt.Sprint(got))
	}
}

func TestFirstDiff(t *testing.T) {
	base := testImage(3*4096+17, 1)
	for _, at := range []int{-1, 0, 1, 4095, 4096, 8191, 3*4096 + 16} {
		b := bytes.Clone(base)
		if at >= 0 {
			b[at]++
		}
		if got := firstDiff(base, b); got != at {
			t.Errorf("difference at %d: firstDiff = %d", at, got)
		}
	}
}

// flakyReadDevice corrupts one byte at off in what ReadBlocks returns, the
// first times reads of it (all of them when times < 0), as a reader with a
// bad cable or a failing card might; the medium itself is right.
type flakyReadDevice struct {
	blockdev.Device
	off   int64
	times int
}

func (d *flakyReadDevice) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	if err := d.Device.ReadBlocks(ctx, lba, p); err != nil {
		return err
	}
	start := lba * int64(d.BlockSize())
	if d.off >= start && d.off < start+int64(len(p)) && d.times != 0 {
		p[d.off-start] ^= 0x10
		d.times--
	}
	return nil
}

func TestLocateMismatch(t *testing.T) {
	const bad = 5*testTransfer + 777
	img := testImage(8*testTransfer+300, 11)
	reopen := func(opened *int) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) {
			*opened++
			return io.NopCloser(bytes.NewReader(img)), nil
		}
	}
	for _, tc := range []struct {
		name  string
		times int // reads of the bad byte that return it wrong; -1: every one
		check func(t *testing.T, err error)
	}{
		{"a byte that reads wrong every time", -1, func(t *testing.T, err error) {
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.HashOnly || ve.LBA != bad/testBS || ve.Offset != bad || ve.Want != img[bad] || ve.Got != img[bad]^0x10 {
				t.Fatalf("err = %#v, want the first bad LBA %d, byte offset %d", err, bad/testBS, bad)
			}
			if !strings.Contains(err.Error(), fmt.Sprint("LBA ", bad/testBS)) || !strings.Contains(err.Error(), "card") {
				t.Errorf("message %q does not name the LBA", err)
			}
		}},
		{"a byte that read wrong once", 1, func(t *testing.T, err error) {
			var ve *VerifyError
			var ie *InconsistentError
			if !errors.As(err, &ie) || !errors.As(err, &ve) || !ve.HashOnly || !strings.Contains(err.Error(), "inconsistent data") {
				t.Fatalf("err = %v, want an *InconsistentError wrapping the hash mismatch", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newTestDevice(t, 2048, testBS, oldByte)
			res := writeImage(t, mem, img)
			dev := &flakyReadDevice{Device: mem, off: bad, times: tc.times}
			opts := VerifyOptions{Name: "sim:card", TransferSize: testTransfer, Progress: func(Progress) {}}
			_, hashErr := VerifyHash(context.Background(), dev, int64(len(img)), res.SHA256, opts)
			if ve := (*VerifyError)(nil); !errors.As(hashErr, &ve) || !ve.HashOnly {
				t.Fatalf("VerifyHash = %v, want a hash mismatch", hashErr)
			}
			opened := 0
			opts.Progress = func(Progress) { t.Error("the second pass reported progress") }
			err := LocateMismatch(context.Background(), dev, reopen(&opened), int64(len(img)), opts, hashErr)
			if opened != 1 {
				t.Errorf("the image was opened %d times, want once", opened)
			}
			tc.check(t, err)
		})
	}
}

// TestLocateMismatchLeavesOtherErrors: an error that is no hash mismatch
// is returned as it is, without decoding the image again; an image that
// cannot be opened again leaves the hash mismatch, saying why.
func TestLocateMismatchLeavesOtherErrors(t *testing.T) {
	dev := newTestDevice(t, 64, testBS, oldByte)
	opened := 0
	open := func() (io.ReadCloser, error) { opened++; return nil, errors.New("gone") }
	for _, err := range []error{
		&DeviceError{Device: "x", Op: OpRead, Err: errors.New("3/11/00")},
		&VerifyError{Device: "x", LBA: 3},
		&CancelledError{Device: "x", Phase: PhaseVerify, Err: context.Canceled},
	} {
		if got := LocateMismatch(context.Background(), dev, open, 10, VerifyOptions{}, err); got != err {
			t.Errorf("LocateMismatch(%v) = %v, want it unchanged", err, got)
		}
	}
	if opened != 0 {
		t.Errorf("the image was opened %d times for errors that are no hash mismatch", opened)
	}
	hashErr := &VerifyError{Device: "x", HashOnly: true, Size: 10}
	err := LocateMismatch(context.Background(), dev, open, 10, VerifyOptions{}, hashErr)
	if !errors.Is(err, hashErr) || !strings.Contains(err.Error(), "gone") {
		t.Errorf("err = %v, want the hash mismatch and why it was not located", err)
	}
}
