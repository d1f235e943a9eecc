package libusb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"usbflash/internal/linuxdisk"
)

var testInfo = Info{Bus: 1, Address: 7, Port: []int{2}, PortPath: "1-2", VID: 0x46f4, PID: 0x0001,
	Config: 1, Interface: 0, Supported: true}

// TestCheckNotInUse: the reader's in-use refusal is linuxdisk's, naming the
// reader and the use; a state that cannot be read is a libusb *Error.
func TestCheckNotInUse(t *testing.T) {
	root := t.TempDir()
	disk := filepath.Join(root, "sys/bus/usb/devices/1-2:1.0/host6/target6:0:0/6:0:0:0/block/sdb")
	if err := os.MkdirAll(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(disk, "dev"), []byte("8:16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mountinfo, swaps := filepath.Join(root, "mountinfo"), filepath.Join(root, "swaps")
	view := linuxdisk.NewSys(filepath.Join(root, "sys"), mountinfo, swaps)
	var e *Error
	if err := checkNotInUse(view, testInfo); !errors.As(err, &e) || !errors.Is(err, ErrInUseUnknown) || errors.Is(err, linuxdisk.ErrInUse) {
		t.Errorf("no mount table: %v, want a libusb *Error of kind ErrInUseUnknown", err)
	}
	if err := os.WriteFile(mountinfo, []byte("36 35 8:16 / /mnt rw - ext4 /dev/sdb rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := checkNotInUse(view, testInfo)
	if !errors.Is(err, linuxdisk.ErrInUse) || !strings.Contains(err.Error(), "46f4:0001") || !strings.Contains(err.Error(), "mounted on /mnt") {
		t.Errorf("mounted: %v, want ErrInUse naming the reader and the mount", err)
	}
	if err := checkNotInUse(view, Info{VID: 1, PID: 2}); err != nil {
		t.Errorf("no port path (not in sysfs): %v, want nil", err)
	}
}
