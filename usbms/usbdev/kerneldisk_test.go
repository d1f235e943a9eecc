package usbdev

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
)

var testInfo = Info{Bus: 1, Address: 7, Port: []int{2}, PortPath: "1-2", VID: 0x46f4, PID: 0x0001,
	Config: 1, Interface: 0, Supported: true}

// TestCheckKernelDisks: the reader's in-use refusal is linuxdisk's, naming
// the reader and the use, and Force skips it; a state that cannot be read
// is a libusb *Error unless forced; the caller's CheckDisks sees the disks
// read for the in-use check (even when forced) and its error is returned
// as it is.
func TestCheckKernelDisks(t *testing.T) {
	errImage := errors.New("the image is on it")
	tests := []struct {
		name      string
		mountinfo string // "" leaves the mount table unreadable
		info      Info
		force     bool
		noCheck   bool     // no CheckDisks
		refuse    bool     // CheckDisks returns errImage
		wantSeen  []string // the disks CheckDisks saw; nil: not called
		wantIs    []error
		wantNot   []error
		wantSay   []string
	}{
		{name: "free", mountinfo: "36 35 8:1 / / rw - ext4 /dev/sda1 rw\n", wantSeen: []string{"sdb"}},
		{name: "free, no caller's check", mountinfo: "36 35 8:1 / / rw - ext4 /dev/sda1 rw\n", noCheck: true},
		{name: "mounted, forced, no caller's check", mountinfo: "36 35 8:16 / /mnt rw - ext4 /dev/sdb rw\n", force: true, noCheck: true},
		{name: "mounted", mountinfo: "36 35 8:16 / /mnt rw - ext4 /dev/sdb rw\n", wantSeen: nil,
			wantIs: []error{ErrInUse}, wantSay: []string{"46f4:0001", "mounted on /mnt"}},
		{name: "mounted, forced", mountinfo: "36 35 8:16 / /mnt rw - ext4 /dev/sdb rw\n", force: true, wantSeen: []string{"sdb"}},
		{name: "no mount table", wantIs: []error{ErrInUseUnknown}, wantNot: []error{ErrInUse}},
		{name: "no mount table, forced", force: true, wantSeen: []string{}},
		{name: "caller refuses", mountinfo: "36 35 8:1 / / rw - ext4 /dev/sda1 rw\n", refuse: true,
			wantSeen: []string{"sdb"}, wantIs: []error{errImage}},
		{name: "caller refuses, forced", mountinfo: "36 35 8:16 / /mnt rw - ext4 /dev/sdb rw\n", force: true, refuse: true,
			wantSeen: []string{"sdb"}, wantIs: []error{errImage}},
		{name: "not in sysfs", info: Info{VID: 1, PID: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			disk := filepath.Join(root, "sys/bus/usb/devices/1-2:1.0/host6/target6:0:0/6:0:0:0/block/sdb")
			if err := os.MkdirAll(disk, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(disk, "dev"), []byte("8:16\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			mountinfo := filepath.Join(root, "mountinfo")
			if tc.mountinfo != "" {
				if err := os.WriteFile(mountinfo, []byte(tc.mountinfo), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(root, "swaps"), []byte("Filename Type Size Used Priority\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			view := linuxdisk.NewSys(filepath.Join(root, "sys"), mountinfo, filepath.Join(root, "swaps"))
			info := testInfo
			if tc.info.VID != 0 {
				info = tc.info
			}
			var seen []string
			opts := OpenOptions{Force: tc.force}
			if !tc.noCheck {
				opts.CheckDisks = func(disks []KernelDisk) error {
					seen = []string{}
					for _, d := range disks {
						seen = append(seen, d.Name)
					}
					if tc.refuse {
						return errImage
					}
					return nil
				}
			}
			err := CheckKernelDisks(view, info, opts)
			if len(tc.wantIs) == 0 && err != nil {
				t.Fatalf("CheckKernelDisks = %v, want nil", err)
			}
			for _, target := range tc.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("CheckKernelDisks = %v, want one that is %v", err, target)
				}
			}
			for _, target := range tc.wantNot {
				if errors.Is(err, target) {
					t.Errorf("CheckKernelDisks = %v, should not be %v", err, target)
				}
			}
			for _, s := range tc.wantSay {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Errorf("error %v does not say %q", err, s)
				}
			}
			// A refusal names each use, for an importer too.
			var ie *InUseError
			if errors.Is(err, ErrInUse) && (!errors.As(err, &ie) || len(ie.Uses) != 1 || ie.Uses[0].Kind != DiskMounted) {
				t.Errorf("in use: %v, want an *InUseError naming the mount", err)
			}
			if errors.Is(err, ErrInUseUnknown) {
				var e *Error
				if !errors.As(err, &e) {
					t.Errorf("unreadable state: %T, want a libusb *Error", err)
				}
			}
			if !reflect.DeepEqual(seen, tc.wantSeen) {
				t.Errorf("CheckDisks saw %q, want %q (nil: not called)", seen, tc.wantSeen)
			}
		})
	}
}
