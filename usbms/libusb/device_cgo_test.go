//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

func TestControlTimeout(t *testing.T) {
	// Deadlines lie a minute ahead of the real clock, so the contexts are
	// alive; "now" as controlTimeout sees it is that minute later.
	now := time.Now().Add(time.Minute)
	max := 5 * time.Second
	withDeadline := func(d time.Duration) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(d))
		t.Cleanup(cancel)
		return ctx
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		want    time.Duration
		fromCtx bool
		err     error
	}{
		{"no deadline", context.Background(), max, false, nil},
		{"far deadline", withDeadline(time.Minute), max, false, nil},
		{"near deadline", withDeadline(300 * time.Millisecond), 300 * time.Millisecond, true, nil},
		{"sub-millisecond deadline would mean forever to libusb", withDeadline(500 * time.Microsecond), 0, true, context.DeadlineExceeded},
		{"cancelled", cancelled, 0, false, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, fromCtx, err := usbdev.ControlTimeout(tc.ctx, max, now)
			if got != tc.want || fromCtx != tc.fromCtx || !errors.Is(err, tc.err) {
				t.Errorf("controlTimeout = %v, %v, %v; want %v, %v, %v", got, fromCtx, err, tc.want, tc.fromCtx, tc.err)
			}
		})
	}
}

func TestCheckUSBFS(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		goos, root string
		wantErr    bool
	}{
		{"linux", dir, false},
		{"linux", filepath.Join(dir, "bus", "usb"), true},
		{"darwin", filepath.Join(dir, "nope"), false},
	}
	for _, tc := range tests {
		err := checkUSBFS(tc.goos, tc.root)
		if (err != nil) != tc.wantErr {
			t.Errorf("checkUSBFS(%s, %s) = %v, want error: %v", tc.goos, tc.root, err, tc.wantErr)
		}
		if err != nil && (!errors.Is(err, usbdev.ErrNoUSBAccess) || !strings.Contains(err.Error(), "does not exist")) {
			t.Errorf("checkUSBFS error %q: want usbdev.ErrNoUSBAccess saying the directory does not exist", err)
		}
	}
}

// On this kind of machine (no /dev/bus/usb) List must say so plainly; with
// USB it must return a list, empty if nothing is attached, never nil+nil.
func TestListOnThisMachine(t *testing.T) {
	infos, err := List(context.Background())
	if _, statErr := os.Stat(usbfsRoot); statErr != nil {
		if !errors.Is(err, usbdev.ErrNoUSBAccess) {
			t.Fatalf("List without %s = %v, %v; want usbdev.ErrNoUSBAccess", usbfsRoot, infos, err)
		}
		return
	}
	if err != nil || infos == nil {
		t.Fatalf("List = %v, %v; want a (possibly empty) list", infos, err)
	}
}

func TestListCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := List(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("List(cancelled) = %v, want context.Canceled", err)
	}
}

func TestOpenUnsupported(t *testing.T) {
	info := usbdev.Info{Bus: 1, Address: 2, PortPath: "1-1", VID: 0x46f4, PID: 3, Protocol: usbdev.ProtocolUAS,
		Reason: "speaks only UAS"}
	_, err := Open(context.Background(), info, usbdev.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "only UAS") {
		t.Fatalf("Open(UAS) = %v, want the reason", err)
	}
}

func TestClosedDevice(t *testing.T) {
	d := &Device{info: fakeInfo, closed: true}
	ctx := context.Background()
	calls := map[string]error{}
	_, calls["BulkOut"] = d.BulkOut(ctx, make([]byte, 31))
	_, calls["BulkIn"] = d.BulkIn(ctx, make([]byte, 13))
	_, calls["ClassRequest"] = d.ClassRequest(ctx, true, 0xFE, 0, make([]byte, 1))
	calls["ClearHalt"] = d.ClearHalt(ctx, true)
	calls["ResetPort"] = d.ResetPort(ctx)
	for name, err := range calls {
		if !errors.Is(err, usbdev.ErrClosed) {
			t.Errorf("%s on a closed device = %v, want usbdev.ErrClosed", name, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	// A device whose re-open after a reset failed reports it as gone.
	lost := &Device{info: fakeInfo}
	if _, err := lost.BulkIn(ctx, make([]byte, 13)); !errors.Is(err, usbms.ErrNoDevice) || !errors.Is(err, usbdev.ErrReenumerationLost) {
		t.Errorf("BulkIn after failed re-open = %v, want ErrNoDevice (usbdev.ErrReenumerationLost)", err)
	}
}
