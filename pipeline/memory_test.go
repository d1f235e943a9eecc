package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"sync"
	"testing"
	"unsafe"
)

// dmaDevice offers its own memory, as a USB reader offers usbfs buffers:
// it checks that every buffer WriteBlocks sends and ReadBlocks fills lies
// inside that memory (no bounce copy in the engine), that nothing touches
// it after free, and counts allocations and frees.
type dmaDevice struct {
	*memDevice
	allocErr error // AllocBuffers fails with it
	give     int   // buffers to give: 0 as asked, else this many
	shrink   int   // bytes each buffer is short of the size asked

	mu           sync.Mutex
	mem          []byte
	live         bool
	allocs       int
	frees        int
	count, size  int
	stray        []string // misplaced buffers, by operation
	writes       int
	beforeWrite  func(n int) error
	beforeRead   func(lba int64) error
	sourceChecks int
}

func newDMADevice(t testing.TB) *dmaDevice {
	d := newTestDevice(t, 2048, testBS, oldByte).(*memDevice)
	return &dmaDevice{memDevice: d}
}

func (d *dmaDevice) AllocBuffers(count, size int) ([][]byte, string, func(), error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.allocs++
	d.count, d.size = count, size
	if d.allocErr != nil {
		return nil, "", nil, d.allocErr
	}
	n := count
	if d.give != 0 {
		n = d.give
	}
	d.mem = make([]byte, n*size)
	for i := range d.mem {
		d.mem[i] = 0x5A // device memory comes as it is, not zeroed
	}
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = d.mem[i*size : (i+1)*size-d.shrink]
	}
	d.live = true
	free := func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.frees++
		d.live = false
	}
	return bufs, "test dma", free, nil
}

// check records p when it is not inside the live memory. Buffers of the
// test's own (reading the device back) are not the engine's and pass when
// no memory is allocated.
func (d *dmaDevice) check(op string, p []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	in := d.inside(p)
	switch {
	case d.live && !in:
		d.stray = append(d.stray, op+": buffer outside the device's memory")
	case !d.live && in:
		d.stray = append(d.stray, op+": buffer used after free")
	}
}

func (d *dmaDevice) inside(p []byte) bool {
	if len(d.mem) == 0 || len(p) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(d.mem)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return at >= base && at+uintptr(len(p)) <= base+uintptr(len(d.mem))
}

func (d *dmaDevice) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	d.check("WriteBlocks", p)
	d.mu.Lock()
	n, hook := d.writes, d.beforeWrite
	d.writes++
	d.mu.Unlock()
	if hook != nil {
		if err := hook(n); err != nil {
			return err
		}
	}
	return d.memDevice.WriteBlocks(ctx, lba, p)
}

func (d *dmaDevice) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	d.check("ReadBlocks", p)
	if d.beforeRead != nil {
		if err := d.beforeRead(lba); err != nil {
			return err
		}
	}
	return d.memDevice.ReadBlocks(ctx, lba, p)
}

// intoDevice is an image source that checks the filler reads it straight
// into the device's memory.
type intoDevice struct {
	r   io.Reader
	dev *dmaDevice
}

func (s *intoDevice) Read(p []byte) (int, error) {
	// A read of one byte is the probe past the image's end, a byte that
	// is never sent.
	if len(p) > 1 {
		s.dev.check("filler's Read", p)
	}
	s.dev.mu.Lock()
	s.dev.sourceChecks++
	s.dev.mu.Unlock()
	return s.r.Read(p)
}

// TestDeviceMemory runs writes and verifies that end every way there is on
// a device offering its own memory: every transfer is sent from and read
// into that memory, the image is read into it, and it is freed exactly once.
func TestDeviceMemory(t *testing.T) {
	img := testImage(9*testTransfer+700, 21)
	opts := WriteOptions{TransferSize: testTransfer, ExpectedSize: int64(len(img)), Sync: true}
	unknown := opts
	unknown.ExpectedSize = -1
	vopts := VerifyOptions{TransferSize: testTransfer}
	devFail := &devFault{"3/11/00"}
	failWrite := func(at int) func(*dmaDevice, context.CancelFunc) {
		return func(d *dmaDevice, _ context.CancelFunc) {
			d.beforeWrite = func(n int) error {
				if n == at {
					return devFail
				}
				return nil
			}
		}
	}
	cancelWrite := func(d *dmaDevice, cancel context.CancelFunc) {
		d.beforeWrite = func(n int) error {
			if n == 2 {
				cancel()
			}
			return nil
		}
	}
	onRead := func(from int64, f func(context.CancelFunc) error) func(*dmaDevice, context.CancelFunc) {
		return func(d *dmaDevice, cancel context.CancelFunc) {
			d.beforeRead = func(lba int64) error {
				if lba >= from*testTransfer/testBS {
					return f(cancel)
				}
				return nil
			}
		}
	}
	type run func(ctx context.Context, d *dmaDevice) (memory string, err error)
	write := func(src func() io.Reader, o WriteOptions) run {
		return func(ctx context.Context, d *dmaDevice) (string, error) {
			res, err := Write(ctx, d, &intoDevice{r: src(), dev: d}, o)
			return res.Memory, err
		}
	}
	verify := func(image []byte, o VerifyOptions) run {
		return func(ctx context.Context, d *dmaDevice) (string, error) {
			res, err := Verify(ctx, d, bytes.NewReader(image), int64(len(image)), o)
			return res.Memory, err
		}
	}
	verifyHash := func(o VerifyOptions) run {
		return func(ctx context.Context, d *dmaDevice) (string, error) {
			res, err := VerifyHash(ctx, d, int64(len(img)), sha256.Sum256(img), o)
			return res.Memory, err
		}
	}
	image := func() io.Reader { return bytes.NewReader(img) }
	for _, tc := range []struct {
		name     string
		prepared bool // the device holds the image before the run
		setup    func(*dmaDevice, context.CancelFunc)
		run      run
		buffers  int // AllocBuffers' count
		wantErr  bool
	}{
		{"write", false, nil, write(image, opts), DefaultBuffers + 2, false},
		{"write unknown size", false, nil, write(image, unknown), DefaultBuffers + 2, false},
		{"write fault on the zeroing write", false, failWrite(0), write(image, opts), DefaultBuffers + 2, true},
		{"write fault", false, failWrite(3), write(image, opts), DefaultBuffers + 2, true},
		{"write cancelled", false, cancelWrite, write(image, opts), DefaultBuffers + 2, true},
		{"write source error", false, nil, write(func() io.Reader {
			return &failAfterReader{r: bytes.NewReader(img), n: 3 * testTransfer, err: io.ErrUnexpectedEOF}
		}, unknown), DefaultBuffers + 2, true},
		{"write past the medium", false, nil, write(func() io.Reader {
			return bytes.NewReader(testImage(2048*testBS+1, 3))
		}, WriteOptions{TransferSize: testTransfer, Buffers: 3, ExpectedSize: -1}), 3 + 2, true},
		{"verify", true, nil, verify(img, vopts), 2, false},
		{"verify mismatch", false, nil, verify(img, vopts), 2, true},
		{"verify hash", true, nil, verifyHash(VerifyOptions{TransferSize: testTransfer, Buffers: 3}), 3, false},
		{"verify read fault", true, onRead(4, func(context.CancelFunc) error { return devFail }), verifyHash(vopts), 2, true},
		{"verify cancelled", true, onRead(2, func(cancel context.CancelFunc) error { cancel(); return nil }), verify(img, vopts), 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			d := newDMADevice(t)
			if tc.prepared {
				padded := append(bytes.Clone(img), make([]byte, roundUp(len(img), testBS)-len(img))...)
				if err := d.memDevice.WriteBlocks(ctx, 0, padded); err != nil {
					t.Fatal(err)
				}
			}
			if tc.setup != nil {
				tc.setup(d, cancel)
			}
			kind, err := tc.run(ctx, d)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if !tc.wantErr && kind != "test dma" {
				t.Errorf("Memory = %q, want the device's kind", kind)
			}
			if err == nil && !bytes.Equal(devContents(t, d.memDevice)[:len(img)], img) {
				t.Error("the device does not hold the image")
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.allocs != 1 || d.frees != 1 {
				t.Errorf("%d allocations, %d frees: want exactly one of each", d.allocs, d.frees)
			}
			if d.count != tc.buffers || d.size != testTransfer {
				t.Errorf("asked for %d buffers of %d bytes, want %d of %d", d.count, d.size, tc.buffers, testTransfer)
			}
			for _, s := range d.stray {
				t.Error(s)
			}
		})
	}
}

// TestDeviceMemoryRefused: a device that cannot give its memory, or gives
// the wrong buffers, fails the call before anything is sent, and what it
// gave is freed.
func TestDeviceMemoryRefused(t *testing.T) {
	img := testImage(3*testTransfer, 23)
	for _, tc := range []struct {
		name      string
		setup     func(*dmaDevice)
		wantFrees int
	}{
		{"refused", func(d *dmaDevice) { d.allocErr = errors.New("usbfs memory exhausted") }, 0},
		{"too few", func(d *dmaDevice) { d.give = 2 }, 1},
		{"too short", func(d *dmaDevice) { d.shrink = testBS }, 1},
	} {
		for _, op := range []string{"write", "verify"} {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				d := newDMADevice(t)
				tc.setup(d)
				var err error
				if op == "write" {
					_, err = Write(context.Background(), d, bytes.NewReader(img), WriteOptions{TransferSize: testTransfer})
				} else {
					_, err = Verify(context.Background(), d, bytes.NewReader(img), -1, VerifyOptions{TransferSize: testTransfer})
				}
				if err == nil {
					t.Fatal("no error")
				}
				if d.allocs != 1 || d.frees != tc.wantFrees || d.writes != 0 {
					t.Errorf("%v: %d allocations, %d frees, %d writes", err, d.allocs, d.frees, d.writes)
				}
				if d.allocErr != nil && !errors.Is(err, d.allocErr) {
					t.Errorf("err = %v, want the device's", err)
				}
			})
		}
	}
}

// TestWriteZeroBufferCleared: device memory is not zeroed when handed out,
// so the engine clears the zero buffer it sends over the first region.
func TestWriteZeroBufferCleared(t *testing.T) {
	d := newDMADevice(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.beforeWrite = func(int) error { cancel(); return nil } // stop after the zeroing write
	img := testImage(5*testTransfer, 24)
	_, err := Write(ctx, d, bytes.NewReader(img), WriteOptions{TransferSize: testTransfer, ExpectedSize: int64(len(img))})
	if !errors.Is(err, context.Canceled) || d.writes != 1 {
		t.Fatalf("err = %v after %d writes, want a cancel after the zeroing write", err, d.writes)
	}
	if got := devContents(t, d.memDevice); !isZero(got[:testTransfer]) {
		t.Error("the first region holds the device memory's old bytes, not zeros")
	}
}

func TestDeviceMemoryKindWithoutAllocator(t *testing.T) {
	res, err := Write(context.Background(), newTestDevice(t, 64, testBS, oldByte), bytes.NewReader(testImage(100, 1)), WriteOptions{TransferSize: testTransfer})
	if err != nil || res.Memory != MemoryAligned {
		t.Fatalf("err = %v, Memory = %q, want %q", err, res.Memory, MemoryAligned)
	}
}

// TestBuffersFor: the default ring at every transfer size fits, with the
// held first transfer, in the 16 MiB Linux grants usbfs memory by default,
// leaving room for the commands in flight; never fewer than two buffers.
func TestBuffersFor(t *testing.T) {
	const usbfsDefault = 16 << 20
	for _, tt := range []struct{ transfer, want int }{
		{512, DefaultBuffers},
		{1 << 20, DefaultBuffers},
		{2 << 20, DefaultBuffers},
		{3 << 20, 3},
		{4 << 20, 2},
		{8 << 20, 2},
		{32 << 20, 2},
		{0, DefaultBuffers},
	} {
		got := BuffersFor(tt.transfer)
		if got != tt.want {
			t.Errorf("BuffersFor(%d) = %d, want %d", tt.transfer, got, tt.want)
		}
		// The cycling buffers and the held first transfer.
		if ring := (got + 1) * tt.transfer; tt.transfer <= 4<<20 && ring >= usbfsDefault {
			t.Errorf("BuffersFor(%d): a ring of %d bytes does not fit usbfs's default %d", tt.transfer, ring, usbfsDefault)
		}
	}
}

// TestReadBackSize: a verify reads in 4 MiB commands unless the write's
// were larger, and several cards' read-back buffers together stay within
// the write ring's bound, never below the write's own size.
func TestReadBackSize(t *testing.T) {
	for _, tt := range []struct{ transfer, cards, want int }{
		{1 << 20, 1, 4 << 20},
		{1 << 20, 0, 4 << 20},
		{120 << 10, 1, 4 << 20},
		{4 << 20, 1, 4 << 20},
		{32 << 20, 1, 32 << 20}, // a larger write size is kept
		{1 << 20, 2, 2 << 20},
		{1 << 20, 3, 2 << 20},
		{1 << 20, 4, 1 << 20},
		{1 << 20, 64, 1 << 20}, // never below what the write used
		{120 << 10, 64, 120 << 10},
		{4096, 64, 64 << 10},
	} {
		got := ReadBackSize(tt.transfer, tt.cards)
		if got != tt.want {
			t.Errorf("ReadBackSize(%d, %d) = %d, want %d", tt.transfer, tt.cards, got, tt.want)
		}
		if got > tt.transfer && 2*got*max(tt.cards, 1) > readBackMemory {
			t.Errorf("ReadBackSize(%d, %d) = %d: %d cards' two buffers pass %d bytes", tt.transfer, tt.cards, got, tt.cards, readBackMemory)
		}
		if got%4096 != 0 && got != tt.transfer {
			t.Errorf("ReadBackSize(%d, %d) = %d: not a whole number of 4096-byte blocks", tt.transfer, tt.cards, got)
		}
	}
}
