//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/gousb"

	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

func cdb(c scsi.CDB) []byte { return c.Bytes() }

// fakeDevice is a Device whose libusb is the fake.
func fakeDevice(t *testing.T, f *fakeHandle) *Device {
	opts := usbdev.OpenOptions{}.WithDefaults()
	return &Device{opts: opts, info: fakeInfo, s: &session{h: f, bulk: newFakePath(t, f)}}
}

// In the steady state a command allocates nothing in C (no transfer, no
// buffer: the fake counts every request) and nothing in Go (the Device
// takes the command's deadline itself, so no timeout context is built),
// whether its data comes from AllocBuffers (sent as it is) or from
// elsewhere (through the bounce buffer).
func TestSteadyStateAllocations(t *testing.T) {
	f := newFakeHandle(16 * mib)
	d := fakeDevice(t, f)
	tr := usbms.NewTransport(d, usbms.TransportOptions{Name: "fake", Timeout: time.Minute})
	bufs, kind, free, err := d.AllocBuffers(2, 4*mib)
	if err != nil || kind != usbms.MemoryZeroCopy {
		t.Fatalf("AllocBuffers = %q, %v; want zero-copy", kind, err)
	}
	defer free()
	ctx := context.Background()
	tests := []struct {
		name string
		dir  usbms.Direction
		cdb  []byte
		data []byte
	}{
		{"WRITE from AllocBuffers", usbms.DataOut, cdb(scsi.Write10(0, 8192, false)), bufs[0]},
		{"WRITE from Go memory", usbms.DataOut, cdb(scsi.Write10(0, 8192, false)), make([]byte, 4*mib)},
		{"READ into AllocBuffers", usbms.DataIn, cdb(scsi.Read10(0, 8192)), bufs[1]},
		{"READ into Go memory", usbms.DataIn, cdb(scsi.Read10(0, 8192)), make([]byte, 4*mib)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The first command may take the bounce buffer, once.
			if _, err := tr.Exec(ctx, 0, tc.cdb, tc.dir, tc.data); err != nil {
				t.Fatal(err)
			}
			before := f.allocs
			var err error
			goAllocs := testing.AllocsPerRun(20, func() {
				_, err = tr.Exec(ctx, 0, tc.cdb, tc.dir, tc.data)
			})
			if err != nil {
				t.Fatal(err)
			}
			if f.allocs != before {
				t.Errorf("%d C allocations in 21 commands, want 0", f.allocs-before)
			}
			if goAllocs != 0 {
				t.Errorf("%v Go allocations per command, want 0", goAllocs)
			}
		})
	}
}

// A READ whose data phase ends short leaves the CSW to the CSW read: the
// command succeeds with the short count and the next one finds its own CSW.
func TestShortReadKeepsCSW(t *testing.T) {
	for _, zeroCopy := range []bool{true, false} {
		f := newFakeHandle(16 * mib)
		d := fakeDevice(t, f)
		tr := usbms.NewTransport(d, usbms.TransportOptions{Name: "fake"})
		p := make([]byte, 8*mib)
		if zeroCopy {
			bufs, _, free, err := d.AllocBuffers(1, 8*mib)
			if err != nil {
				t.Fatal(err)
			}
			defer free()
			p = bufs[0]
		}
		f.shortIn = 3 * mib
		n, err := tr.Exec(context.Background(), 0, cdb(scsi.Read10(0, 16384)), usbms.DataIn, p)
		if err != nil || n != 3*mib {
			t.Fatalf("zero-copy %v: short READ = %d, %v; want %d, nil", zeroCopy, n, err, 3*mib)
		}
		f.shortIn = 0
		if _, err := tr.Exec(context.Background(), 0, cdb(scsi.TestUnitReady()), usbms.NoData, nil); err != nil {
			t.Fatalf("zero-copy %v: the command after a short READ failed: %v", zeroCopy, err)
		}
	}
}

// A stall mid-OUT is mapped to usbms.ErrStall, so the transport clears the
// halt on bulk-OUT through libusb_clear_halt and reads the CSW.
func TestStallMidWriteClearsHalt(t *testing.T) {
	f := newFakeHandle(16 * mib)
	f.fail = func(i int) error {
		if i == 3 { // CBW, then the second 1 MiB piece
			return gousb.TransferStall
		}
		return nil
	}
	d := fakeDevice(t, f)
	tr := usbms.NewTransport(d, usbms.TransportOptions{Name: "fake"})
	_, err := tr.Exec(context.Background(), 0, cdb(scsi.Write10(0, 8192, false)), usbms.DataOut, make([]byte, 4*mib))
	if err != nil {
		t.Fatalf("WRITE with a stalled data phase = %v; want the CSW's pass", err)
	}
	if len(f.clears) != 1 || f.clears[0] != fakeOut || f.inflight != 0 {
		t.Errorf("halts cleared on %x with %d transfers in flight; want bulk-OUT once, none", f.clears, f.inflight)
	}
}

func TestFreeAndClose(t *testing.T) {
	f := newFakeHandle(16 * mib)
	d := fakeDevice(t, f)
	_, _, free, err := d.AllocBuffers(3, 4*mib)
	if err != nil {
		t.Fatal(err)
	}
	if d.MemoryKind() != usbms.MemoryZeroCopy {
		t.Errorf("MemoryKind = %q", d.MemoryKind())
	}
	free()
	free()
	if f.budget != 16*mib-smallLen {
		t.Errorf("after free %d bytes of usbfs memory held, want only the command buffer's %d", 16*mib-f.budget, smallLen)
	}
	if _, _, _, err := d.AllocBuffers(3, 4*mib); err != nil {
		t.Fatal(err)
	}
	d.s.bulk.close()
	d.s = nil
	if err := d.Close(); err != nil || len(d.regions) != 0 {
		t.Errorf("Close = %v with %d regions left", err, len(d.regions))
	}
}

// A transfer pending at the deadline the transport set is cancelled and
// fails with context.DeadlineExceeded, which the transport words as "no
// answer" and answers with reset recovery.
func TestDeadlineCancelsTransfer(t *testing.T) {
	f := newFakeHandle(0)
	d := fakeDevice(t, f)
	d.SetDeadline(time.Now().Add(-time.Second))
	f.hang = true
	_, err := d.BulkOut(context.Background(), make([]byte, 2*mib))
	if !errors.Is(err, context.DeadlineExceeded) || f.inflight != 0 {
		t.Fatalf("BulkOut past its deadline = %v with %d in flight; want DeadlineExceeded, none", err, f.inflight)
	}
	d.SetDeadline(time.Time{})
	f.hang = false
	if _, err := d.BulkOut(context.Background(), make([]byte, 2*mib)); err != nil {
		t.Fatalf("BulkOut without a deadline = %v", err)
	}
}
