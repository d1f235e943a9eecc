//go:build linux

package libusbdl

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// systemLib loads the machine's libusb-1.0 (Debian's libusb-1.0-0, which
// CI installs): these tests are of the real library.
func systemLib(t *testing.T) *Library {
	t.Helper()
	l, err := Load("libusb-1.0.so.0")
	if err != nil {
		t.Fatalf("libusb-1.0.so.0 (apt-get install libusb-1.0-0): %v", err)
	}
	return l
}

// The real library loads, every entry point is found, and the optional
// ones libusb 1.0.21 added are there in what Debian ships.
func TestLoadSystemLibrary(t *testing.T) {
	l := systemLib(t)
	if !l.atLeast(21) {
		t.Fatalf("libusb %s, want 1.0.21 or later here", l.Version())
	}
	for name, p := range map[string]uintptr{"libusb_dev_mem_alloc": l.fn.devMemAlloc, "libusb_alloc_streams": l.fn.allocStreams,
		"libusb_transfer_set_stream_id": l.fn.transferSetStreamID, "libusb_interrupt_event_handler": l.fn.interruptEventHandler} {
		if p == 0 {
			t.Errorf("%s not found in libusb %s", name, l.Version())
		}
	}
}

// A library that is not there, or lacks an entry point, is ErrNoLibusb
// with every path tried and why.
func TestLoadMissing(t *testing.T) {
	_, err := Load("/nonexistent/a.so", "libc.so.6")
	if !errors.Is(err, usbdev.ErrNoLibusb) || !errors.Is(err, usbdev.ErrNoUSBAccess) {
		t.Fatalf("kind: %v", err)
	}
	for _, want := range []string{"/nonexistent/a.so", "libc.so.6: no libusb_init"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	var s symbols
	err = s.bind(func(name string) (uintptr, error) {
		if name == "libusb_dev_mem_alloc" || name == "libusb_alloc_streams" {
			return 0, errors.New("undefined")
		}
		return 1, nil
	})
	if err != nil || s.devMemAlloc != 0 || s.submitTransfer != 1 {
		t.Errorf("optional entry points missing: %v", err)
	}
	err = s.bind(func(name string) (uintptr, error) {
		if name == "libusb_clear_halt" {
			return 0, errors.New("undefined")
		}
		return 1, nil
	})
	if err == nil || !strings.Contains(err.Error(), "libusb_clear_halt") {
		t.Errorf("a required entry point missing: %v", err)
	}
}

// Where the library is looked for, on each system.
func TestCandidates(t *testing.T) {
	for _, tt := range []struct {
		goos, env, exe, path string
		want                 []string
	}{
		{"linux", "", "/usr/bin/usbflash", "", []string{"libusb-1.0.so.0", "libusb-1.0.so"}},
		{"linux", "/opt/libusb.so", "/usr/bin/usbflash", "", []string{"/opt/libusb.so"}},
		{"darwin", "", "/usr/local/bin/usbflash", "", []string{"/usr/local/bin/libusb-1.0.0.dylib",
			"/opt/homebrew/lib/libusb-1.0.0.dylib", "/usr/local/lib/libusb-1.0.0.dylib", "/opt/local/lib/libusb-1.0.0.dylib", "libusb-1.0.0.dylib"}},
		// PATH's relative entries (the current directory) are not searched.
		{"windows", "", "/c/tools/usbflash.exe", "/c/bin" + string(filepath.ListSeparator) + "." + string(filepath.ListSeparator) + "/d/usb",
			[]string{"/c/tools/libusb-1.0.dll", "/c/bin/libusb-1.0.dll", "/d/usb/libusb-1.0.dll"}},
	} {
		got := candidates(tt.goos, tt.env, tt.exe, tt.path)
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%s env %q: %v, want %v", tt.goos, tt.env, got, tt.want)
		}
	}
}

// Every structure this package reads or writes has libusb.h's layout:
// a C program compiled against the header prints its offsets and sizes.
func TestLayoutMatchesHeader(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to read libusb.h's layouts with")
	}
	inc := "/usr/include/libusb-1.0"
	if _, err := os.Stat(filepath.Join(inc, "libusb.h")); err != nil {
		t.Skip("no libusb.h (apt-get install libusb-1.0-0-dev)")
	}
	dir := t.TempDir()
	var prog strings.Builder
	prog.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <libusb.h>\nint main(void){\n")
	type field struct {
		c   string
		go_ uintptr
	}
	var tr transferC
	var dd deviceDescriptor
	var cd configDescriptor
	var ic interfaceC
	var id interfaceDescriptor
	var ed endpointDescriptor
	var vc versionC
	var tv timeval
	fields := []field{
		{"sizeof(struct libusb_transfer)", unsafe.Sizeof(tr)},
		{"offsetof(struct libusb_transfer, dev_handle)", unsafe.Offsetof(tr.devHandle)},
		{"offsetof(struct libusb_transfer, flags)", unsafe.Offsetof(tr.flags)},
		{"offsetof(struct libusb_transfer, endpoint)", unsafe.Offsetof(tr.endpoint)},
		{"offsetof(struct libusb_transfer, type)", unsafe.Offsetof(tr.typ)},
		{"offsetof(struct libusb_transfer, timeout)", unsafe.Offsetof(tr.timeout)},
		{"offsetof(struct libusb_transfer, status)", unsafe.Offsetof(tr.status)},
		{"offsetof(struct libusb_transfer, length)", unsafe.Offsetof(tr.length)},
		{"offsetof(struct libusb_transfer, actual_length)", unsafe.Offsetof(tr.actualLength)},
		{"offsetof(struct libusb_transfer, callback)", unsafe.Offsetof(tr.callback)},
		{"offsetof(struct libusb_transfer, user_data)", unsafe.Offsetof(tr.userData)},
		{"offsetof(struct libusb_transfer, buffer)", unsafe.Offsetof(tr.buffer)},
		{"offsetof(struct libusb_transfer, num_iso_packets)", unsafe.Offsetof(tr.numIsoPackets)},
		{"sizeof(struct libusb_device_descriptor)", unsafe.Sizeof(dd)},
		{"offsetof(struct libusb_device_descriptor, idVendor)", unsafe.Offsetof(dd.idVendor)},
		{"offsetof(struct libusb_device_descriptor, bcdDevice)", unsafe.Offsetof(dd.bcdDevice)},
		{"offsetof(struct libusb_device_descriptor, bNumConfigurations)", unsafe.Offsetof(dd.bNumConfigurations)},
		{"sizeof(struct libusb_config_descriptor)", unsafe.Sizeof(cd)},
		{"offsetof(struct libusb_config_descriptor, bConfigurationValue)", unsafe.Offsetof(cd.bConfigurationValue)},
		{"offsetof(struct libusb_config_descriptor, interface)", unsafe.Offsetof(cd.iface)},
		{"offsetof(struct libusb_config_descriptor, extra)", unsafe.Offsetof(cd.extra)},
		{"offsetof(struct libusb_config_descriptor, extra_length)", unsafe.Offsetof(cd.extraLength)},
		{"sizeof(struct libusb_interface)", unsafe.Sizeof(ic)},
		{"offsetof(struct libusb_interface, num_altsetting)", unsafe.Offsetof(ic.numAltsetting)},
		{"sizeof(struct libusb_interface_descriptor)", unsafe.Sizeof(id)},
		{"offsetof(struct libusb_interface_descriptor, iInterface)", unsafe.Offsetof(id.iInterface)},
		{"offsetof(struct libusb_interface_descriptor, endpoint)", unsafe.Offsetof(id.endpoint)},
		{"offsetof(struct libusb_interface_descriptor, extra)", unsafe.Offsetof(id.extra)},
		{"offsetof(struct libusb_interface_descriptor, extra_length)", unsafe.Offsetof(id.extraLength)},
		{"sizeof(struct libusb_endpoint_descriptor)", unsafe.Sizeof(ed)},
		{"offsetof(struct libusb_endpoint_descriptor, wMaxPacketSize)", unsafe.Offsetof(ed.wMaxPacketSize)},
		{"offsetof(struct libusb_endpoint_descriptor, extra)", unsafe.Offsetof(ed.extra)},
		{"offsetof(struct libusb_endpoint_descriptor, extra_length)", unsafe.Offsetof(ed.extraLength)},
		{"sizeof(struct libusb_version)", unsafe.Sizeof(vc)},
		{"sizeof(struct timeval)", unsafe.Sizeof(tv)},
		{"LIBUSB_CONTROL_SETUP_SIZE", controlSetupLen},
		{"LIBUSB_TRANSFER_TYPE_CONTROL", transferTypeControl},
		{"LIBUSB_TRANSFER_TYPE_BULK", transferTypeBulk},
		{"LIBUSB_TRANSFER_TYPE_BULK_STREAM", transferTypeBulkStream},
		{"LIBUSB_TRANSFER_COMPLETED", statusCompleted},
		{"LIBUSB_TRANSFER_ERROR", statusError},
		{"LIBUSB_TRANSFER_TIMED_OUT", statusTimedOut},
		{"LIBUSB_TRANSFER_CANCELLED", statusCancelled},
		{"LIBUSB_TRANSFER_STALL", statusStall},
		{"LIBUSB_TRANSFER_NO_DEVICE", statusNoDevice},
		{"LIBUSB_TRANSFER_OVERFLOW", statusOverflow},
	}
	for _, f := range fields {
		prog.WriteString("printf(\"%ld\\n\", (long)(" + f.c + "));\n")
	}
	for c := range codeNames {
		name := strings.Fields(strings.TrimPrefix(c.Error(), "libusb: "))[0]
		fields = append(fields, field{name, uintptr(int64(c))})
		prog.WriteString("printf(\"%ld\\n\", (long)(" + name + "));\n")
	}
	prog.WriteString("return 0;}\n")
	src := filepath.Join(dir, "layout.c")
	if err := os.WriteFile(src, []byte(prog.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "layout")
	if out, err := exec.Command(cc, "-I"+inc, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for _, f := range fields {
		if !sc.Scan() {
			t.Fatal("the program printed too little")
		}
		v, _ := strconv.ParseInt(sc.Text(), 10, 64)
		if uintptr(v) != f.go_ {
			t.Errorf("%s: libusb.h %d, ours %d", f.c, v, int64(f.go_))
		}
	}
}

// Every libusb error and transfer status has the kind usbfs gives for
// the same failure; a cancel or timeout is the context's reason.
func TestKinds(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	for _, tt := range []struct {
		err  error
		ctx  context.Context
		want error
	}{
		{ErrPipe, live, usbms.ErrStall}, {Status(statusStall), live, usbms.ErrStall},
		{ErrNoDevice, live, usbms.ErrNoDevice}, {Status(statusNoDevice), live, usbms.ErrNoDevice},
		{ErrAccess, live, usbdev.ErrPermission}, {ErrBusy, live, usbdev.ErrBusy},
		{ErrNoMem, live, usbdev.ErrNoMemory}, {ErrNotFound, live, usbdev.ErrNotFound},
		{ErrOverflow, live, usbdev.ErrOverflow}, {Status(statusOverflow), live, usbdev.ErrOverflow},
		{Status(statusCancelled), done, context.Canceled}, {ErrTimeout, done, context.Canceled},
		{context.DeadlineExceeded, live, context.DeadlineExceeded},
	} {
		err := mapError(tt.ctx, "a transfer", usbdev.Info{VID: 0x46f4}, tt.err)
		var ue *usbdev.Error
		if !errors.Is(err, tt.want) || !errors.As(err, &ue) || ue.VID != 0x46f4 {
			t.Errorf("%v: %v, want kind %v", tt.err, err, tt.want)
		}
	}
	if e := mapError(live, "x", usbdev.Info{}, Status(statusCancelled)).(*usbdev.Error); e.Kind != nil {
		t.Errorf("a cancel with the context live has kind %v", e.Kind)
	}
	if e := mapError(live, "x", usbdev.Info{}, Status(statusError)).(*usbdev.Error); e.Kind != nil {
		t.Errorf("LIBUSB_TRANSFER_ERROR has kind %v", e.Kind)
	}
}

// The real library's context and event thread start, handle rounds, and
// stop when asked (libusb_interrupt_event_handler wakes it).
func TestEventLoopReal(t *testing.T) {
	l := systemLib(t)
	loop, err := startLoop(l)
	if err != nil {
		t.Skipf("libusb_init: %v (no USB in this machine)", err)
	}
	x, err := loop.newXfer()
	if err != nil || x.t == nil {
		t.Fatalf("libusb_alloc_transfer: %v", err)
	}
	for loop.rounds.Load() == 0 {
		// The first round ends at eventSlice with nothing to do.
		time.Sleep(time.Millisecond)
	}
	loop.stopThread() // returns: the interrupt woke the handler
	loop.exit()
}

// List on this machine: whatever it has, an answer without an error.
func TestListReal(t *testing.T) {
	l := systemLib(t)
	infos, err := l.List(context.Background())
	if err != nil && !errors.Is(err, usbdev.ErrNoUSBAccess) {
		t.Fatal(err)
	}
	for _, i := range infos {
		if i.PortPath == "" || i.VID == 0 {
			t.Errorf("an interface without its port or IDs: %+v", i)
		}
	}
}

// A configuration libusb parsed, put back into bytes, lists as the
// device's own descriptors do: the UAS pipes from their Pipe Usage
// descriptors and the streams from the SuperSpeed companions, kept in
// the endpoints' extra bytes.
func TestRawConfig(t *testing.T) {
	companion := func(pipe byte) []byte { return []byte{6, 0x30, 15, 4, 0, 0, 4, 0x24, pipe, 0} }
	eps := []endpointDescriptor{
		{bEndpointAddress: 0x01, bmAttributes: 2, wMaxPacketSize: 1024},
		{bEndpointAddress: 0x82, bmAttributes: 2, wMaxPacketSize: 1024},
		{bEndpointAddress: 0x83, bmAttributes: 2, wMaxPacketSize: 1024},
		{bEndpointAddress: 0x04, bmAttributes: 2, wMaxPacketSize: 1024},
	}
	extras := [][]byte{{6, 0x30, 15, 0, 0, 0, 4, 0x24, 1, 0}, companion(2), companion(3), companion(4)}
	for i := range eps {
		eps[i].extra, eps[i].extraLength = &extras[i][0], int32(len(extras[i]))
	}
	alt := interfaceDescriptor{bNumEndpoints: 4, bInterfaceClass: 8, bInterfaceSubClass: 6, bInterfaceProtocol: 0x62, endpoint: &eps[0]}
	ifc := interfaceC{altsetting: &alt, numAltsetting: 1}
	cfg := configDescriptor{bNumInterfaces: 1, bConfigurationValue: 1, iface: &ifc}
	dd := deviceDescriptor{bcdUSB: 0x300, idVendor: 0x46f4, idProduct: 3, bNumConfigurations: 1}
	alts, err := usbdev.ParseDescriptors(append(deviceBytes(dd), rawConfig(&cfg)...), 1)
	if err != nil {
		t.Fatal(err)
	}
	infos := usbdev.InterfaceInfos(usbdev.Info{Speed: usbdev.SpeedSuper}, alts)
	want := usbdev.UASSetting{Command: 0x01, Status: 0x82, DataIn: 0x83, DataOut: 0x04, MaxStreams: 16}
	if len(infos) != 1 || !infos[0].Supported || infos[0].UAS != want {
		t.Errorf("infos %+v, want one supported with UAS %+v", infos, want)
	}
}
