//go:build e2e

// Command stallprobe runs inside the e2e guest (see ../clearhalt_test.go).
// On the real libusb/usbfs path it makes QEMU's usb-storage STALL both bulk
// endpoints, recovers with the backend's ClearHalt alone (usbms/usbfs's
// USBDEVFS_CLEAR_HALT, or with -tags libusb usbms/libusb's libusb_clear_halt
// through cgo: usbms/backend chooses, as for the binary), checks that a ClearHalt on an endpoint that is not
// halted is harmless, then moves real data through usbms. (QEMU keeps no
// halt state, so it cannot show that the endpoint would stay stuck without
// ClearHalt: see the test's comment.)
//
// How QEMU 7.2 hw/usb/dev-storage.c (usb_msd_handle_data) is made to STALL,
// without leaving it in a state only a reset could fix:
//
//   - bulk-OUT: a 31-byte CBW whose signature is not "USBC" ("Bad
//     signature", goto fail -> USB_RET_STALL). The device stays in
//     USB_MSDM_CBW mode: no SCSI request is created.
//   - bulk-IN: a 13-byte read while the device waits for a CBW (mode
//     USB_MSDM_CBW falls into "default: goto fail").
//
// Not used: an unknown LUN does not stall usb-storage (scsi_device_find
// falls back to the target's device when no LUN matches exactly), and a
// data-out longer than the CBW announced stalls with a SCSI request left
// half-done, which QEMU 7.2's Mass Storage Reset does not cancel.
//
// It prints one line per step and exits 0 only when every check passed,
// ending with "PASS". Exit 1 means a check failed, 2 a usage error.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/backend"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

func main() {
	serial := flag.String("serial", "", "iSerialNumber of the QEMU reader to use (46f4:0001)")
	lba := flag.Int64("lba", 0, "first block the pattern is written to")
	patternPath := flag.String("pattern", "", "file holding the pattern (whole 512-byte blocks)")
	rounds := flag.Int("rounds", 3, "stall + ClearHalt rounds")
	flag.Parse()
	if *serial == "" || *patternPath == "" || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: stallprobe -serial S -lba N -pattern FILE [-rounds N]")
		os.Exit(2)
	}
	pattern, err := os.ReadFile(*patternPath)
	if err != nil || len(pattern) == 0 || len(pattern)%512 != 0 {
		fmt.Fprintf(os.Stderr, "pattern %s: %d bytes, %v: want whole 512-byte blocks\n", *patternPath, len(pattern), err)
		os.Exit(2)
	}
	t0 := time.Now()
	if err := run(*serial, *lba, pattern, *rounds); err != nil {
		fmt.Printf("FAIL after %v: %v\n", time.Since(t0).Round(time.Millisecond), err)
		os.Exit(1)
	}
	fmt.Printf("PASS in %v\n", time.Since(t0).Round(time.Millisecond))
}

// stepTimeout bounds every USB call: a STALL or an answer comes at once, a
// hang must not outlive the guest-side timeout the test sets.
const stepTimeout = 10 * time.Second

func step(f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	return f(ctx)
}

func run(serial string, lba int64, pattern []byte, rounds int) error {
	var info usbdev.Info
	err := step(func(ctx context.Context) error {
		infos, err := backend.List(ctx)
		if err != nil {
			return fmt.Errorf("%s List: %w", backend.Name, err)
		}
		for _, i := range infos {
			if i.VID == 0x46f4 && i.PID == 0x0001 && i.Serial == serial && i.Supported {
				info = i
				return nil
			}
		}
		return fmt.Errorf("%s List: no supported 46f4:0001 with serial %q among %d interfaces", backend.Name, serial, len(infos))
	})
	if err != nil {
		return err
	}
	fmt.Printf("list: %s port %s speed %v, bulk-in 0x%02x (mps %d), bulk-out 0x%02x (mps %d)\n",
		info.String(), info.PortPath, info.Speed, info.BulkIn, info.BulkInMaxPacket, info.BulkOut, info.BulkOutMaxPacket)

	var dev backend.Device
	if err := step(func(ctx context.Context) (err error) {
		dev, err = backend.Open(ctx, info, usbdev.OpenOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("%s Open: %w", backend.Name, err)
	}
	defer dev.Close()
	fmt.Printf("open: ok (%s)\n", backend.Name)

	var tag uint32 = 0x5a000000
	inquiry := func(what string) error {
		tag++
		if err := step(func(ctx context.Context) error { return rawInquiry(ctx, dev, tag) }); err != nil {
			return fmt.Errorf("%s: raw INQUIRY: %w", what, err)
		}
		fmt.Printf("%s: raw INQUIRY (CBW out, 36 bytes in, CSW in) tag %#x: ok, status 0\n", what, tag)
		return nil
	}
	if err := inquiry("baseline"); err != nil {
		return err
	}

	for r := 1; r <= rounds; r++ {
		p := fmt.Sprintf("round %d", r)
		// A CBW that is valid but for its signature.
		bad := cbw(tag+1, scsi.Inquiry(36), 36)
		copy(bad[0:4], "USBX")
		var n int
		err := step(func(ctx context.Context) (err error) {
			n, err = dev.BulkOut(ctx, bad)
			return err
		})
		if !errors.Is(err, usbms.ErrStall) {
			return fmt.Errorf("%s: BulkOut of a CBW with a bad signature: n=%d err=%v, want usbms.ErrStall", p, n, err)
		}
		fmt.Printf("%s: bad CBW -> BulkOut: errors.Is(err, usbms.ErrStall) (%v)\n", p, err)

		buf := make([]byte, 13)
		err = step(func(ctx context.Context) (err error) {
			n, err = dev.BulkIn(ctx, buf)
			return err
		})
		if !errors.Is(err, usbms.ErrStall) {
			return fmt.Errorf("%s: BulkIn with no command pending: n=%d err=%v, want usbms.ErrStall", p, n, err)
		}
		fmt.Printf("%s: BulkIn with no command -> errors.Is(err, usbms.ErrStall) (%v)\n", p, err)

		// Both endpoints halted, as after an invalid CBW (BOT 6.6.1):
		// clear them, and nothing else (no Mass Storage Reset, no port
		// reset).
		for _, in := range []bool{true, false} {
			if err := step(func(ctx context.Context) error { return dev.ClearHalt(ctx, in) }); err != nil {
				return fmt.Errorf("%s: ClearHalt(%s) on the halted endpoint: %w", p, dirName(in), err)
			}
			fmt.Printf("%s: ClearHalt(%s) on the halted endpoint: ok\n", p, dirName(in))
		}
		if err := inquiry(p + ": after ClearHalt"); err != nil {
			return err
		}
	}

	// ClearHalt on endpoints that are not halted: nil, and the device
	// still answers.
	for _, in := range []bool{true, false} {
		if err := step(func(ctx context.Context) error { return dev.ClearHalt(ctx, in) }); err != nil {
			return fmt.Errorf("ClearHalt(%s) on an endpoint that is not halted: %w", dirName(in), err)
		}
		fmt.Printf("not halted: ClearHalt(%s): ok\n", dirName(in))
	}
	if err := inquiry("not halted: after ClearHalt"); err != nil {
		return err
	}

	// Real commands through usbms, counting every recovery the transport
	// would attempt: there must be none, the endpoints are healthy.
	ep := &counting{Endpoint: dev}
	tr := usbms.NewTransport(ep, usbms.TransportOptions{Name: "stallprobe"})
	var lun *usbms.LUN
	if err := step(func(ctx context.Context) (err error) {
		lun, err = usbms.OpenLUN(ctx, tr, 0, usbms.LUNOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("usbms.OpenLUN: %w", err)
	}
	inq := lun.Inquiry()
	fmt.Printf("usbms.OpenLUN: %q %q rev %q, %d blocks of %d bytes, write-protected %v\n",
		inq.Vendor, inq.Product, inq.Revision, lun.BlockCount(), lun.BlockSize(), lun.WriteProtected())
	if lun.BlockSize() != 512 {
		return fmt.Errorf("block size %d, want 512", lun.BlockSize())
	}
	blocks := int64(len(pattern) / 512)
	if err := step(func(ctx context.Context) error { return lun.WriteBlocks(ctx, lba, pattern) }); err != nil {
		return fmt.Errorf("WriteBlocks(LBA %d, %d blocks): %w", lba, blocks, err)
	}
	fmt.Printf("usbms WriteBlocks: LBA %d-%d (%d blocks): ok\n", lba, lba+blocks-1, blocks)
	got := make([]byte, len(pattern))
	if err := step(func(ctx context.Context) error { return lun.ReadBlocks(ctx, lba, got) }); err != nil {
		return fmt.Errorf("ReadBlocks(LBA %d, %d blocks): %w", lba, blocks, err)
	}
	if !bytes.Equal(got, pattern) {
		i := 0
		for got[i] == pattern[i] {
			i++
		}
		return fmt.Errorf("ReadBlocks: data differs from what was written at byte %d (LBA %d)", i, lba+int64(i/512))
	}
	fmt.Printf("usbms ReadBlocks: LBA %d-%d: equals the pattern\n", lba, lba+blocks-1)
	if err := step(func(ctx context.Context) error { return lun.Sync(ctx) }); err != nil {
		return fmt.Errorf("SYNCHRONIZE CACHE: %w", err)
	}
	fmt.Println("usbms Sync: ok")
	if c := ep.snapshot(); c != (counts{}) {
		return fmt.Errorf("the transport needed recovery on healthy endpoints: %+v", c)
	}
	fmt.Println("usbms recovery calls: none (no ClearHalt, Mass Storage Reset or port reset)")
	if err := dev.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	fmt.Println("close: ok")
	return nil
}

func dirName(in bool) string {
	if in {
		return "bulk-in"
	}
	return "bulk-out"
}

// cbw builds a data-in Command Block Wrapper for LUN 0 (BOT 5.1).
func cbw(tag uint32, c scsi.CDB, length uint32) []byte {
	b := make([]byte, 31)
	copy(b[0:4], "USBC")
	binary.LittleEndian.PutUint32(b[4:8], tag)
	binary.LittleEndian.PutUint32(b[8:12], length)
	b[12] = 0x80
	b[14] = byte(c.Len())
	copy(b[15:], c.Bytes())
	return b
}

// rawInquiry runs INQUIRY by hand on the endpoints, with no recovery at
// all: any STALL left over fails it.
func rawInquiry(ctx context.Context, dev backend.Device, tag uint32) error {
	n, err := dev.BulkOut(ctx, cbw(tag, scsi.Inquiry(36), 36))
	if err != nil || n != 31 {
		return fmt.Errorf("CBW: n=%d err=%v", n, err)
	}
	data := make([]byte, 36)
	n, err = dev.BulkIn(ctx, data)
	if err != nil || n != 36 {
		return fmt.Errorf("data in: n=%d err=%v", n, err)
	}
	if v := string(data[8:16]); v != "QEMU    " {
		return fmt.Errorf("data in: vendor %q, want QEMU", v)
	}
	csw := make([]byte, 13)
	n, err = dev.BulkIn(ctx, csw)
	if err != nil || n != 13 {
		return fmt.Errorf("CSW: n=%d err=%v", n, err)
	}
	if string(csw[0:4]) != "USBS" || binary.LittleEndian.Uint32(csw[4:8]) != tag {
		return fmt.Errorf("CSW: % x: bad signature or tag (want tag %#x)", csw, tag)
	}
	if res, st := binary.LittleEndian.Uint32(csw[8:12]), csw[12]; res != 0 || st != 0 {
		return fmt.Errorf("CSW: residue %d status %d, want 0 0", res, st)
	}
	return nil
}

// counts are the recovery steps the transport took.
type counts struct {
	ClearHalt, MassStorageReset, ResetPort int
}

// counting passes every call to the device and counts recoveries.
type counting struct {
	usbms.Endpoint
	mu sync.Mutex
	c  counts
}

func (e *counting) snapshot() counts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c
}

func (e *counting) ClearHalt(ctx context.Context, in bool) error {
	e.mu.Lock()
	e.c.ClearHalt++
	e.mu.Unlock()
	fmt.Printf("  (transport: ClearHalt(%s))\n", dirName(in))
	return e.Endpoint.ClearHalt(ctx, in)
}

func (e *counting) ResetPort(ctx context.Context) error {
	e.mu.Lock()
	e.c.ResetPort++
	e.mu.Unlock()
	fmt.Println("  (transport: ResetPort)")
	return e.Endpoint.ResetPort(ctx)
}

func (e *counting) ClassRequest(ctx context.Context, in bool, request uint8, value uint16, data []byte) (int, error) {
	if request == 0xFF { // Mass Storage Reset (BOT 3.1)
		e.mu.Lock()
		e.c.MassStorageReset++
		e.mu.Unlock()
		fmt.Println("  (transport: Mass Storage Reset)")
	}
	return e.Endpoint.ClassRequest(ctx, in, request, value, data)
}
