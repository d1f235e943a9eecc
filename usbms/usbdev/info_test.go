package usbdev

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

func TestFormatPortPath(t *testing.T) {
	tests := []struct {
		bus  int
		port []int
		want string
	}{
		{1, []int{2}, "1-2"},
		{1, []int{2, 3}, "1-2.3"},
		{3, []int{1, 4, 2, 7}, "3-1.4.2.7"},
		{2, nil, "usb2"}, // root hub
		{10, []int{12}, "10-12"},
	}
	for _, tc := range tests {
		got := FormatPortPath(tc.bus, tc.port)
		if got != tc.want {
			t.Errorf("FormatPortPath(%d, %v) = %q, want %q", tc.bus, tc.port, got, tc.want)
		}
		if tc.port == nil {
			continue
		}
		bus, port, err := ParsePortPath(got)
		if err != nil || bus != tc.bus || !reflect.DeepEqual(port, tc.port) {
			t.Errorf("ParsePortPath(%q) = %d, %v, %v; want %d, %v", got, bus, port, err, tc.bus, tc.port)
		}
	}
}

func TestParsePortPathRejects(t *testing.T) {
	for _, s := range []string{"", "1", "1-", "usb1", "x-1", "1-2.", "1-0", "1-2.a", "1-256", "-1-2"} {
		if _, _, err := ParsePortPath(s); err == nil {
			t.Errorf("ParsePortPath(%q): want an error", s)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		sub, proto uint8
		supported  bool
		reason     string
	}{
		{0x06, 0x50, true, ""},
		{0x06, 0x62, true, ""}, // UAS: the backend checks its pipes
		{0x06, 0x00, false, "subclass 0x06 protocol 0x00"},
		{0x04, 0x00, false, "not SCSI, RBC or ATAPI over Bulk-Only"},
		{0x04, 0x50, false, "subclass 0x04 protocol 0x50"}, // UFI over BOT: not driven
		{0xFF, 0x50, false, "subclass 0xff"},
		// As Linux's usb-storage: RBC as SCSI, ATAPI with 12-byte CDBs.
		{0x01, 0x50, true, ""},
		{0x02, 0x50, true, ""},
		{0x03, 0x50, true, ""},
		{0x05, 0x50, true, ""},
	}
	for _, tc := range tests {
		ok, reason := Classify(tc.sub, tc.proto)
		if ok != tc.supported || !strings.Contains(reason, tc.reason) {
			t.Errorf("Classify(%#x, %#x) = %v, %q; want %v, containing %q", tc.sub, tc.proto, ok, reason, tc.supported, tc.reason)
		}
	}
}

func TestInfoNames(t *testing.T) {
	info := Info{Bus: 1, Address: 5, PortPath: "1-2.3", VID: 0x46f4, PID: 0x0001,
		Product: "QEMU USB HARDDRIVE", Serial: "1-0000:00:04.0-1", Config: 1}
	if got, want := info.DevNode(), "/dev/bus/usb/001/005"; got != want {
		t.Errorf("DevNode = %q, want %q", got, want)
	}
	if got, want := info.String(), `46f4:0001 "QEMU USB HARDDRIVE" serial 1-0000:00:04.0-1 (bus 1 address 5, port 1-2.3, config 1 interface 0 alt 0)`; got != want {
		t.Errorf("String = %q\nwant     %q", got, want)
	}
	if got, want := info.SysfsName(), "1-2.3:1.0"; got != want {
		t.Errorf("SysfsName = %q, want %q", got, want)
	}
}

func TestSpeedString(t *testing.T) {
	for s, want := range map[Speed]string{SpeedHigh: "480 Mbit/s", SpeedSuper: "5 Gbit/s", SpeedFull: "12 Mbit/s", Speed(42): "unknown"} {
		if !strings.Contains(s.String(), want) {
			t.Errorf("Speed(%d) = %q, want it to contain %q", int(s), s, want)
		}
	}
}

func TestErrorFormatAndUnwrap(t *testing.T) {
	under := errors.New("libusb: bad access [code -3]")
	tests := []struct {
		name     string
		err      *Error
		want     string
		is, isnt []error
	}{
		{
			name: "kind and cause",
			err:  &Error{Op: "opening", Device: "46f4:0001", Kind: ErrPermission, Err: under, VID: 0x46f4},
			want: "opening on 46f4:0001: no permission to open the USB device (libusb: bad access [code -3])",
			is:   []error{ErrPermission, under},
			isnt: []error{ErrBusy},
		},
		{
			name: "kind only",
			err:  &Error{Op: "bulk IN transfer", Kind: ErrClosed},
			want: "bulk IN transfer: device closed",
			is:   []error{ErrClosed},
		},
		{
			name: "cause only",
			err:  &Error{Op: "closing", Device: "d", Err: under},
			want: "closing on d: libusb: bad access [code -3]",
			is:   []error{under},
			isnt: []error{ErrPermission},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q\nwant      %q", got, tc.want)
			}
			for _, e := range tc.is {
				if !errors.Is(tc.err, e) {
					t.Errorf("errors.Is(%v) = false", e)
				}
			}
			for _, e := range tc.isnt {
				if errors.Is(tc.err, e) {
					t.Errorf("errors.Is(%v) = true", e)
				}
			}
		})
	}
}

func TestNoUSBSupportMessage(t *testing.T) {
	want := "this usbflash was built without a USB backend"
	if ErrNoUSBSupport.Error() != want {
		t.Errorf("ErrNoUSBSupport = %q, want %q", ErrNoUSBSupport, want)
	}
}

// TestKindsStateFacts: every kind this package reports, and the message of
// an *Error of each, states facts only; the CLI gives the advice.
func TestKindsStateFacts(t *testing.T) {
	info := Info{Bus: 1, Address: 5, PortPath: "1-2", VID: 0x46f4, PID: 0x0001}
	kinds := []error{ErrNoUSBSupport, ErrNoUSBAccess, ErrPermission, ErrBusy, ErrNotFound,
		ErrDeviceChanged, ErrDescriptorsChanged, ErrReenumerationLost, ErrNoMemory, ErrOverflow,
		ErrListFailed, ErrReattachFailed, ErrInUseUnknown, ErrClosed}
	for _, k := range kinds {
		e := NewError("opening", info, k, errors.New("libusb: some failure [code -99]"))
		factsonly.Check(t, k.Error(), e.Error())
		if !errors.Is(e, k) {
			t.Errorf("errors.Is(%v, %v) = false", e, k)
		}
	}
	if !errors.Is(ErrDeviceChanged, ErrNotFound) || !errors.Is(ErrReenumerationLost, ErrNoDevice) {
		t.Error("a narrow kind does not match its broad one")
	}
	if e := NewError("x", info, nil, nil); e.VID != 0x46f4 || e.Port != "1-2" || e.DevNode != "/dev/bus/usb/001/005" {
		t.Errorf("NewError facts = %+v", e)
	}
}
