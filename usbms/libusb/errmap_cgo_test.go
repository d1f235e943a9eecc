//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/gousb"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

func TestMapError(t *testing.T) {
	info := usbdev.Info{Bus: 1, Address: 5, PortPath: "1-2", VID: 0x46f4, PID: 0x0001}
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -1)
	defer cancel2()

	tests := []struct {
		name     string
		ctx      context.Context
		err      error
		kind     error  // errors.Is must hold
		contains string // in the message
	}{
		{"transfer stall", live, gousb.TransferStall, usbms.ErrStall, "endpoint stalled"},
		{"control stall (pipe error)", live, gousb.ErrorPipe, usbms.ErrStall, "pipe error"},
		{"transfer no device", live, gousb.TransferNoDevice, usbms.ErrNoDevice, "device disconnected"},
		{"libusb no device", live, gousb.ErrorNoDevice, usbms.ErrNoDevice, "no device"},
		{"cancelled by ctx", cancelled, gousb.TransferCancelled, context.Canceled, "cancel"},
		{"deadline", expired, gousb.TransferCancelled, context.DeadlineExceeded, "deadline"},
		{"libusb timeout past deadline", expired, gousb.ErrorTimeout, context.DeadlineExceeded, "timeout"},
		{"stall wins over a late cancel", cancelled, gousb.TransferStall, usbms.ErrStall, "stalled"},
		{"access", live, gousb.ErrorAccess, usbdev.ErrPermission, "no permission to open the USB device"},
		{"busy", live, gousb.ErrorBusy, usbdev.ErrBusy, "device busy: another program (or the kernel driver) holds it"},
		{"claim failure wrapped by gousb with %v", live,
			fmt.Errorf("failed to claim interface 0 on vid=46f4,pid=0001,bus=1,addr=5,config=1: %v", gousb.ErrorBusy), usbdev.ErrBusy, "device busy"},
		{"set config failure wrapped by gousb with %v", live,
			fmt.Errorf("failed to set active config 1 for the device x: %v", gousb.ErrorAccess), usbdev.ErrPermission, "no permission"},
		{"usbfs memory", live, gousb.ErrorNoMem, usbdev.ErrNoMemory, "usbfs_memory_mb"},
		{"not found", live, gousb.ErrorNotFound, usbdev.ErrNotFound, "device not found"},
		{"overflow", live, gousb.TransferOverflow, usbdev.ErrOverflow, "more data"},
		{"unknown error kept", live, errors.New("weird"), nil, "weird"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := mapError(tc.ctx, "bulk IN transfer of 13 bytes", info, tc.err)
			if err == nil {
				t.Fatal("mapError returned nil")
			}
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.kind)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("the underlying error %v is not reachable from %v", tc.err, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.contains) {
				t.Errorf("message %q does not contain %q", msg, tc.contains)
			}
			if !strings.Contains(msg, "46f4:0001") || !strings.Contains(msg, "bulk IN transfer of 13 bytes") {
				t.Errorf("message %q should name the operation and the device", msg)
			}
			factsonly.Check(t, msg)
			var e *usbdev.Error
			if !errors.As(err, &e) || e.VID != info.VID || e.Port != info.PortPath || e.DevNode != "/dev/bus/usb/001/005" {
				t.Errorf("error %#v does not carry the device's VID, port and node", e)
			}
		})
	}
	if mapError(live, "x", info, nil) != nil {
		t.Error("mapError(nil) != nil")
	}
}

func TestLibusbCodeFromText(t *testing.T) {
	tests := []struct {
		err  error
		want gousb.Error
		ok   bool
	}{
		{fmt.Errorf("wrapped: %v", gousb.ErrorBusy), gousb.ErrorBusy, true},
		{fmt.Errorf("wrapped: %w", gousb.ErrorAccess), gousb.ErrorAccess, true},
		{errors.New("no code here"), 0, false},
		{errors.New("[code 3]"), 0, false}, // libusb errors are negative
	}
	for _, tc := range tests {
		got, _, ok := libusbCode(tc.err)
		if got != tc.want || ok != tc.ok {
			t.Errorf("libusbCode(%q) = %v, %v; want %v, %v", tc.err, got, ok, tc.want, tc.ok)
		}
	}
}
