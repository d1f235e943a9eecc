//go:build linux

package usbfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// The request numbers as linux/usbdevice_fs.h gives them on 64-bit and
// 32-bit architectures of the generic ioctl encoding.
func TestIoctlNumbers(t *testing.T) {
	want64 := map[string]uintptr{
		"CONTROL": 0xc0185500, "SETINTERFACE": 0x80085504, "GETDRIVER": 0x41045508,
		"SUBMITURB": 0x8038550a, "DISCARDURB": 0x550b, "REAPURB": 0x4008550c,
		"REAPURBNDELAY": 0x4008550d, "RELEASEINTERFACE": 0x80045510, "IOCTL": 0xc0105512,
		"RESET": 0x5514, "CLEAR_HALT": 0x80045515, "CONNECT": 0x5517,
		"GET_CAPABILITIES": 0x8004551a, "DISCONNECT_CLAIM": 0x8108551b,
		"ALLOC_STREAMS": 0x8008551c, "FREE_STREAMS": 0x8008551d,
	}
	want32 := map[string]uintptr{
		"CONTROL": 0xc0105500, "SUBMITURB": 0x802c550a, "REAPURB": 0x4004550c,
		"REAPURBNDELAY": 0x4004550d, "IOCTL": 0xc00c5512,
	}
	got := map[string]uintptr{
		"CONTROL": ioctlControl, "SETINTERFACE": ioctlSetInterface, "GETDRIVER": ioctlGetDriver,
		"SUBMITURB": ioctlSubmitURB, "DISCARDURB": ioctlDiscardURB, "REAPURB": ioctlReapURB,
		"REAPURBNDELAY": ioctlReapURBNDelay, "RELEASEINTERFACE": ioctlReleaseIntf, "IOCTL": ioctlIoctl,
		"RESET": ioctlReset, "CLEAR_HALT": ioctlClearHalt, "CONNECT": ioctlConnect,
		"GET_CAPABILITIES": ioctlGetCapabilities, "DISCONNECT_CLAIM": ioctlDisconnectClaim,
		"ALLOC_STREAMS": ioctlAllocStreams, "FREE_STREAMS": ioctlFreeStreams,
	}
	for name, g := range got {
		w := want64[name]
		if unsafe.Sizeof(uintptr(0)) == 4 {
			if w32, ok := want32[name]; ok {
				w = w32
			}
		}
		if g != w {
			t.Errorf("USBDEVFS_%s = %#x, want %#x", name, g, w)
		}
	}
}

// The structs' layouts against the kernel's (pahole of usbdevice_fs.h).
func TestStructLayouts(t *testing.T) {
	var u urb
	if unsafe.Sizeof(uintptr(0)) == 8 {
		check(t, "urb", unsafe.Sizeof(u), 56)
		check(t, "urb.buffer", unsafe.Offsetof(u.Buffer), 16)
		check(t, "urb.actual_length", unsafe.Offsetof(u.ActualLength), 28)
		check(t, "urb.usercontext", unsafe.Offsetof(u.UserContext), 48)
		check(t, "ctrltransfer", unsafe.Sizeof(ctrlTransfer{}), 24)
		check(t, "ctrltransfer.data", unsafe.Offsetof(ctrlTransfer{}.Data), 16)
		check(t, "ioctl", unsafe.Sizeof(ioctlArg{}), 16)
	} else {
		check(t, "urb", unsafe.Sizeof(u), 44)
		check(t, "urb.buffer", unsafe.Offsetof(u.Buffer), 12)
		check(t, "ctrltransfer", unsafe.Sizeof(ctrlTransfer{}), 16)
		check(t, "ioctl", unsafe.Sizeof(ioctlArg{}), 12)
	}
	check(t, "urb.status", unsafe.Offsetof(u.Status), 4)
	check(t, "urb.flags", unsafe.Offsetof(u.Flags), 8)
	check(t, "ctrltransfer.timeout", unsafe.Offsetof(ctrlTransfer{}.Timeout), 8)
	check(t, "disconnect_claim", unsafe.Sizeof(disconnectClaim{}), 264)
	check(t, "getdriver", unsafe.Sizeof(getDriver{}), 260)
}

func check(t *testing.T, what string, got, want uintptr) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %d, want %d", what, got, want)
	}
}

// descBOTAndUAS is a UAS reader's configuration: interface 0 alt 0 BOT
// (endpoints 0x81, 0x02, 512), alt 1 UAS.
var descBOTAndUAS = []byte{
	18, 1, 0x00, 0x02, 0, 0, 0, 64, 0xf4, 0x46, 0x01, 0, 0, 0, 1, 2, 3, 1,
	9, 2, 55, 0, 1, 1, 0, 0x80, 50,
	9, 4, 0, 0, 2, 8, 6, 0x50, 0,
	7, 5, 0x81, 2, 0x00, 0x02, 0,
	7, 5, 0x02, 2, 0x00, 0x02, 0,
	9, 4, 0, 1, 2, 8, 6, 0x62, 0,
	7, 5, 0x83, 2, 0x00, 0x02, 0,
	7, 5, 0x04, 2, 0x00, 0x02, 0,
}

// fixture writes a sysfs tree: one BOT+UAS reader at 2-1.4 (descriptors
// file), one hub, one UAS-only device at 2-3 read from its interface
// directory (no descriptors file), an ATAPI reader over Bulk-Only at 2-5
// and a root hub.
func fixture(t *testing.T) string {
	root := t.TempDir()
	write := func(dir string, kv map[string]string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for k, v := range kv {
			if err := os.WriteFile(filepath.Join(root, dir, k), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	dev := map[string]string{"busnum": "2", "devnum": "7", "idVendor": "46f4", "idProduct": "0001", "bcdDevice": "0133",
		"speed": "480", "bConfigurationValue": "1", "manufacturer": "QEMU", "product": "QEMU USB HARDDRIVE",
		"serial": "1-0000:00:04.0-1.4"}
	write("2-1.4", dev)
	if err := os.WriteFile(filepath.Join(root, "2-1.4", "descriptors"), descBOTAndUAS, 0o644); err != nil {
		t.Fatal(err)
	}
	write("2-1.4/2-1.4:1.0", map[string]string{"bInterfaceClass": "08", "bInterfaceNumber": "00",
		"bAlternateSetting": " 1", "bInterfaceSubClass": "06", "bInterfaceProtocol": "62"})
	write("2-1", map[string]string{"busnum": "2", "devnum": "2", "idVendor": "0409", "idProduct": "55aa", "speed": "480"})
	write("2-1/2-1:1.0", map[string]string{"bInterfaceClass": "09"})
	write("usb2", map[string]string{"busnum": "2", "devnum": "1"})
	write("2-3", map[string]string{"busnum": "2", "devnum": "3", "idVendor": "46f4", "idProduct": "0003",
		"speed": "5000", "bConfigurationValue": "1"})
	write("2-3/2-3:1.0", map[string]string{"bInterfaceClass": "08", "bInterfaceNumber": "00",
		"bAlternateSetting": " 0", "bInterfaceSubClass": "06", "bInterfaceProtocol": "62"})
	write("2-3/2-3:1.0/ep_81", map[string]string{"bEndpointAddress": "81", "type": "Bulk", "wMaxPacketSize": "0400"})
	write("2-3/2-3:1.0/ep_02", map[string]string{"bEndpointAddress": "02", "type": "Bulk", "wMaxPacketSize": "0400"})
	// An ATAPI (SFF-8070i) reader over Bulk-Only at 2-5, as Linux drives it.
	write("2-5", map[string]string{"busnum": "2", "devnum": "5", "idVendor": "059b", "idProduct": "0001",
		"speed": "12", "bConfigurationValue": "1"})
	write("2-5/2-5:1.0", map[string]string{"bInterfaceClass": "08", "bInterfaceNumber": "00",
		"bAlternateSetting": " 0", "bInterfaceSubClass": "05", "bInterfaceProtocol": "50"})
	write("2-5/2-5:1.0/ep_81", map[string]string{"bEndpointAddress": "81", "type": "Bulk", "wMaxPacketSize": "0040"})
	write("2-5/2-5:1.0/ep_02", map[string]string{"bEndpointAddress": "02", "type": "Bulk", "wMaxPacketSize": "0040"})
	return root
}

func TestListFromSysfs(t *testing.T) {
	infos, err := listFrom(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 3 {
		t.Fatalf("got %d infos, want 3: %+v", len(infos), infos)
	}
	a := infos[0]
	if a.PortPath != "2-1.4" || a.Bus != 2 || a.Address != 7 || len(a.Port) != 2 || a.Port[1] != 4 ||
		a.VID != 0x46f4 || a.PID != 1 || a.BCDDevice != 0x0133 || a.Speed != usbdev.SpeedHigh || a.Product != "QEMU USB HARDDRIVE" ||
		a.Serial != "1-0000:00:04.0-1.4" || a.Config != 1 || a.Interface != 0 || a.AltSetting != 0 ||
		!a.Supported || a.BulkIn != 0x81 || a.BulkOut != 0x02 || a.BulkInMaxPacket != 512 || a.BulkOutMaxPacket != 512 {
		t.Errorf("BOT reader (its BOT alternate, though UAS is current): %+v", a)
	}
	if a.DevNode() != "/dev/bus/usb/002/007" {
		t.Errorf("DevNode %s", a.DevNode())
	}
	b := infos[1]
	if b.PortPath != "2-3" || b.Supported || b.Protocol != usbdev.ProtocolUAS || b.Speed != usbdev.SpeedSuper ||
		b.BulkIn != 0x81 || b.BulkOutMaxPacket != 1024 {
		t.Errorf("UAS-only device: %+v", b)
	}
	if c := infos[2]; c.PortPath != "2-5" || !c.Supported || c.SubClass != usbdev.Subclass8070i || c.BCDDevice != 0 ||
		c.BulkIn != 0x81 || c.BulkOut != 0x02 {
		t.Errorf("ATAPI reader over Bulk-Only (no bcdDevice shown): %+v", c)
	}
}

func TestFindDevice(t *testing.T) {
	root := fixture(t)
	infos, _ := listFrom(root)
	d := &Device{root: root}
	info := infos[0]
	moved := info
	moved.Address = 9
	if _, err := d.findDevice(moved, false); !errors.Is(err, usbdev.ErrNotFound) {
		t.Errorf("other address: %v", err)
	}
	if got, err := d.findDevice(moved, true); err != nil || got.Address != 7 {
		t.Errorf("by port: %+v %v", got, err)
	}
	other := info
	other.Serial = "X"
	if _, err := d.findDevice(other, false); !errors.Is(err, usbdev.ErrDeviceChanged) || !errors.Is(err, usbdev.ErrNotFound) {
		t.Errorf("other serial: %v", err)
	}
	eps := info
	eps.BulkOut = 0x03
	if _, err := d.findDevice(eps, false); !errors.Is(err, usbdev.ErrDescriptorsChanged) {
		t.Errorf("other endpoints: %v", err)
	}
}

func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	info := usbdev.Info{Bus: 1, Address: 5, VID: 0x46f4, PortPath: "1-1"}
	cases := []struct {
		err  error
		kind error
	}{
		{urbStatus(unix.EPIPE), usbms.ErrStall},
		{urbStatus(unix.ESHUTDOWN), usbms.ErrNoDevice},
		{urbStatus(unix.ENODEV), usbms.ErrNoDevice},
		{urbStatus(unix.EOVERFLOW), usbdev.ErrOverflow},
		{unix.ENODEV, usbms.ErrNoDevice},
		{unix.EACCES, usbdev.ErrPermission},
		{unix.EBUSY, usbdev.ErrBusy},
		{unix.ENOMEM, usbdev.ErrNoMemory},
		{unix.ENOENT, usbdev.ErrNotFound},
		{context.DeadlineExceeded, context.DeadlineExceeded},
	}
	for _, c := range cases {
		e := mapError(ctx, "op", info, c.err)
		if !errors.Is(e, c.kind) {
			t.Errorf("%v: %v, want kind %v", c.err, e, c.kind)
		}
		var le *usbdev.Error
		if !errors.As(e, &le) || le.VID != 0x46f4 || le.DevNode != "/dev/bus/usb/001/005" {
			t.Errorf("%v: not a full *usbdev.Error: %#v", c.err, e)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if e := mapError(cctx, "op", info, urbStatus(unix.ENOENT)); !errors.Is(e, context.Canceled) {
		t.Errorf("discarded URB under a cancelled context: %v", e)
	}
	if e := mapError(ctx, "op", info, urbStatus(unix.EPROTO)); !errors.Is(e, unix.EPROTO) {
		t.Errorf("protocol error: %v", e)
	}
}

// URBs never straddle the end of a usbfs mapping, and are at most the
// piece size otherwise.
func TestPieceLen(t *testing.T) {
	mem := make([]byte, 3*mapPiece)
	d := &Device{piece: 1 << 20, regions: []region{{mem: mem, mapped: true}}}
	if n := d.pieceLen(mem, 0); n != 1<<20 {
		t.Errorf("start: %d", n)
	}
	if n := d.pieceLen(mem, mapPiece-4096); n != 4096 {
		t.Errorf("before a mapping's end: %d", n)
	}
	if n := d.pieceLen(mem[:mapPiece+100], mapPiece); n != 100 {
		t.Errorf("tail: %d", n)
	}
	other := make([]byte, 3<<20)
	if n := d.pieceLen(other, 100); n != 1<<20 {
		t.Errorf("Go memory: %d", n)
	}
}

// TestMemoryKind: a report says when usbfs_memory_mb left some buffers to
// be copied.
func TestMemoryKind(t *testing.T) {
	for _, tt := range []struct {
		mapped, count int
		want          string
	}{
		{6, 6, usbms.MemoryZeroCopy},
		{0, 6, usbms.MemoryPageAligned},
		{3, 4, "usbfs zero-copy for 3 of 4 buffers (usbfs_memory_mb bounds it)"},
	} {
		if got := memoryKind(tt.mapped, tt.count); got != tt.want {
			t.Errorf("memoryKind(%d, %d) = %q, want %q", tt.mapped, tt.count, got, tt.want)
		}
	}
}

// TestMappable: buffers map no more of usbfs_memory_mb than leaves room
// for a copied piece and the commands beside them.
func TestMappable(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		param string // usbfs_memory_mb's content, "" for none
		want  int64
	}{
		{"16\n", 16<<20 - 1<<20 - 64<<10},
		{"0\n", -1},
		{"", 16<<20 - 1<<20 - 64<<10},
		{"1\n", 0},
		{"256\n", 256<<20 - 1<<20 - 64<<10},
	} {
		p := filepath.Join(dir, "usbfs_memory_mb")
		os.Remove(p)
		if tt.param != "" {
			if err := os.WriteFile(p, []byte(tt.param), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := mappable(usbfsLimitOf(dir).bytes, 1<<20); got != tt.want {
			t.Errorf("usbfs_memory_mb %q: mappable = %d, want %d", tt.param, got, tt.want)
		}
	}
}

// TestRaiseUsbfsLimit: the limit goes up by what is asked, in whole MiB,
// and says so; where it cannot be written (not root), nothing is said.
func TestRaiseUsbfsLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "usbfs_memory_mb")
	if err := os.WriteFile(p, []byte("16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := usbfsLimitOf(dir)
	if got := l.raise(25<<20 + 1); got != "usbfs_memory_mb raised from 16 to 42" {
		t.Errorf("raise: %q", got)
	}
	if b, _ := os.ReadFile(p); string(b) != "42" || l.bytes != 42<<20 {
		t.Errorf("after raise: file %q, limit %d", b, l.bytes)
	}
	ro := usbfsLimit{dir: filepath.Join(dir, "missing"), bytes: 16 << 20}
	if got := ro.raise(1 << 20); got != "" || ro.bytes != 16<<20 {
		t.Errorf("raise where it cannot be written: %q, limit %d", got, ro.bytes)
	}
}

// TestNewWaiter: a node epoll can watch gets a waiter in Go's poller (an
// eventfd stands in for the usbfs node, whose poll says POLLOUT when a URB
// completed); one it cannot (a regular file) gets none, and poll(2) waits.
// The duplicate is the waiter's own: closing it leaves fd open.
func TestNewWaiter(t *testing.T) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Skipf("eventfd: %v", err)
	}
	defer unix.Close(efd)
	w := newWaiter(efd)
	if w == nil {
		t.Fatal("no waiter for a pollable fd")
	}
	// Writable at once: the wait returns, and the reap in it fails as an
	// ioctl on an eventfd does (not a usbfs node), not with a timeout.
	if _, _, err := w.reapWait(1000); err == nil || err == unix.EAGAIN {
		t.Errorf("reapWait on an eventfd: %v, want the ioctl's error", err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = w.reapWait(1000) }); n != 0 {
		t.Errorf("a wait allocates %v times", n)
	}
	w.close()
	if _, err := unix.FcntlInt(uintptr(efd), unix.F_GETFD, 0); err != nil {
		t.Errorf("closing the waiter closed the node: %v", err)
	}
	f, err := os.CreateTemp(t.TempDir(), "node")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if w := newWaiter(int(f.Fd())); w != nil {
		w.close()
		t.Error("a waiter for a regular file, which epoll cannot watch")
	}
	var nilWaiter *waiter
	nilWaiter.close() // closeNode calls it on a Device without one
}
