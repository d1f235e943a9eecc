package diskdev

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// memDisk is a disk in memory that records every transfer it is asked
// for: its length, where, and whether its buffer was aligned as the
// device's config asks.
type memDisk struct {
	data   []byte
	align  int
	calls  []string
	synced int
	closed int
}

func (m *memDisk) record(op string, p []byte, off int64) {
	a := uintptr(unsafe.Pointer(unsafe.SliceData(p)))%uintptr(m.align) == 0
	m.calls = append(m.calls, fmt.Sprintf("%s %d@%d aligned=%v", op, len(p), off, a))
}

func (m *memDisk) ReadAt(p []byte, off int64) (int, error) {
	m.record("read", p, off)
	return copy(p, m.data[off:]), nil
}

func (m *memDisk) WriteAt(p []byte, off int64) (int, error) {
	m.record("write", p, off)
	return copy(m.data[off:], p), nil
}

func (m *memDisk) Sync() error  { m.synced++; return nil }
func (m *memDisk) Close() error { m.closed++; return nil }

func newMem(blocks int64, cfg config) (*Device, *memDisk) {
	cfg.blockSize = max(cfg.blockSize, 512)
	cfg.blocks = blocks
	m := &memDisk{data: make([]byte, blocks*int64(cfg.blockSize))}
	d := newDevice(m, cfg)
	m.align = d.cfg.align
	return d, m
}

// TestTransferPieces: a transfer goes to the disk in pieces no larger
// than it takes, each from aligned memory: the caller's own buffer when it
// is aligned, an aligned copy when not; what is read through a copy lands
// in the caller's buffer.
func TestTransferPieces(t *testing.T) {
	a := aligned.Alignment()
	tests := []struct {
		name     string
		maxBytes int64
		offset   int // the caller's buffer starts this far past an aligned address
		size     int
		want     []string
	}{
		{"aligned, no limit", 0, 0, 64 << 10, []string{"write 65536@4096 aligned=true"}},
		{"aligned, cut to the limit", 16 << 10, 0, 40 << 10, []string{
			"write 16384@4096 aligned=true", "write 16384@20480 aligned=true", "write 8192@36864 aligned=true"}},
		{"limit not a whole block", 1000, 0, 1024, []string{"write 512@4096 aligned=true", "write 512@4608 aligned=true"}},
		{"misaligned: an aligned copy", 0, 512, 8 << 10, []string{"write 8192@4096 aligned=true"}},
		{"misaligned and cut", 4096, 1, 12 << 10, []string{
			"write 4096@4096 aligned=true", "write 4096@8192 aligned=true", "write 4096@12288 aligned=true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, m := newMem(1024, config{name: "disk:mem", maxBytes: tt.maxBytes})
			mem := aligned.Bytes(tt.size + a)
			p := mem[tt.offset : tt.offset+tt.size]
			for i := range p {
				p[i] = byte(i*7 + 1)
			}
			if err := d.WriteBlocks(context.Background(), 8, p); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m.calls, tt.want) {
				t.Errorf("transfers\n%q\nwant\n%q", m.calls, tt.want)
			}
			if !bytes.Equal(m.data[4096:4096+tt.size], p) {
				t.Error("the disk does not hold what was written")
			}
			// Read back into another misaligned buffer: the same pieces.
			back := aligned.Bytes(tt.size + a)[tt.offset+3 : tt.offset+3+tt.size]
			m.calls = nil
			if err := d.ReadBlocks(context.Background(), 8, back); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, p) {
				t.Error("read back through a copy differs")
			}
			for _, c := range m.calls {
				if !bytes.HasSuffix([]byte(c), []byte("aligned=true")) {
					t.Errorf("read %s", c)
				}
			}
		})
	}
}

// TestPrepareBeforeFirstWrite: the step before writing (Windows clears
// the drive's layout) runs once, before the first write and not for a
// read; when it fails no write reaches the disk.
func TestPrepareBeforeFirstWrite(t *testing.T) {
	ctx := context.Background()
	buf := aligned.Bytes(4096)
	var order []string
	var m *memDisk
	prepare := func() error {
		order = append(order, fmt.Sprintf("prepare after %d transfers", len(m.calls)))
		return nil
	}
	d, m := newMem(64, config{name: "disk:mem", prepare: prepare})
	if err := d.ReadBlocks(ctx, 0, buf); err != nil {
		t.Fatal(err)
	}
	if len(order) != 0 {
		t.Fatal("a read prepared the disk for writing")
	}
	for lba := range int64(3) {
		if err := d.WriteBlocks(ctx, lba*8, buf); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"prepare after 1 transfers"}; !reflect.DeepEqual(order, want) {
		t.Errorf("prepare ran %q, want %q", order, want)
	}

	failing := errors.New("IOCTL_DISK_DELETE_DRIVE_LAYOUT: access denied")
	d, m = newMem(64, config{name: "disk:mem", prepare: func() error { return failing }})
	for range 2 {
		if err := d.WriteBlocks(ctx, 0, buf); !errors.Is(err, failing) {
			t.Fatalf("write after a failed prepare = %v", err)
		}
	}
	if len(m.calls) != 0 {
		t.Errorf("the disk was written after its preparation failed: %q", m.calls)
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	buf := aligned.Bytes(1024)
	d, m := newMem(16, config{name: "disk:mem", wp: true})
	if err := d.WriteBlocks(ctx, 0, buf); !errors.Is(err, blockdev.ErrWriteProtected) {
		t.Errorf("write to a write-protected disk = %v", err)
	}
	if err := d.ReadBlocks(ctx, 15, buf); err == nil {
		t.Error("a read past the end was sent")
	}
	if err := d.WriteBlocks(ctx, 0, buf[:100]); err == nil {
		t.Error("a part of a block was sent")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.ReadBlocks(cctx, 0, buf); !errors.Is(err, context.Canceled) {
		t.Errorf("read with a cancelled context = %v", err)
	}
	if len(m.calls) != 0 {
		t.Errorf("refused transfers reached the disk: %q", m.calls)
	}
	if !d.WriteProtected() || d.MaxTransfer() != 0 || d.String() != "disk:mem" {
		t.Errorf("facts: wp %v max %d name %q", d.WriteProtected(), d.MaxTransfer(), d)
	}
}

func TestCloseReleasesOnce(t *testing.T) {
	released := 0
	d, m := newMem(16, config{name: "disk:mem", release: func() { released++ }, maxBytes: 1 << 20})
	if err := d.Sync(context.Background()); err != nil || m.synced != 1 {
		t.Errorf("Sync = %v, synced %d", err, m.synced)
	}
	if got := d.MaxTransfer(); got != 2048 {
		t.Errorf("MaxTransfer = %d blocks, want 2048", got)
	}
	if err := d.Eject(context.Background()); !errors.Is(err, ErrNotEjectable) {
		t.Errorf("Eject of a disk without eject = %v", err)
	}
	d.Close()
	d.Close()
	if m.closed != 1 || released != 1 {
		t.Errorf("closed %d times, released %d times", m.closed, released)
	}
}
