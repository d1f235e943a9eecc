package drive

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/flock"
	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/usbms/sim"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// TestOpenErrors: the one mapping of open failures to kinds.
func TestOpenErrors(t *testing.T) {
	usb := Spec{Scheme: USB, Raw: "usb:46f4:0001"}
	inUse := &linuxdisk.InUseError{Device: "/dev/loop0", Uses: []linuxdisk.Use{{Kind: linuxdisk.Swap, Node: "/dev/loop0", Of: "/dev/loop0"}}}
	tests := []struct {
		name  string
		t     Spec
		err   error
		class failure.Class
		want  string
	}{
		{"in use", Spec{Scheme: File, Raw: "file:/dev/loop0"}, inUse, failure.Refused, "/dev/loop0 is active swap"},
		{"mounted and held", Spec{Scheme: File, Raw: "file:/dev/sdx"}, &linuxdisk.InUseError{Device: "/dev/sdx", Uses: []linuxdisk.Use{
			{Kind: linuxdisk.Mounted, Node: "/dev/sdx1", MountPoint: "/a"}, {Kind: linuxdisk.Mounted, Node: "/dev/sdx2", MountPoint: "/b"},
			{Kind: linuxdisk.Held, Node: "/dev/dm-0", Of: "/dev/sdx3"}}}, failure.Refused,
			"/dev/sdx1 is mounted on /a; /dev/sdx2 is mounted on /b; /dev/sdx3 is held by dm-0"},
		{"exclusive open refused", Spec{Scheme: File, Raw: "file:/dev/sdx"}, fmt.Errorf("file target /dev/sdx: the kernel refused an exclusive open (%w): %w", syscall.EBUSY, linuxdisk.ErrInUse), failure.Refused, "exclusive open"},
		// The check that could not be made is a refusal too, and no use.
		{"in use unknown (usb:)", usb, usbdev.NewError("checking whether the device's disk is in use", usbdev.Info{VID: 0x46f4, PID: 1},
			linuxdisk.ErrInUseUnknown, errors.New("open /proc/self/mountinfo: no such file or directory")), failure.Refused, "cannot tell whether the disk is in use"},
		{"in use unknown (file:)", Spec{Scheme: File, Raw: "file:/dev/sdx"}, fmt.Errorf("file target /dev/sdx: %w: %w", linuxdisk.ErrInUseUnknown,
			errors.New("open /proc/self/mountinfo: no such file or directory")), failure.Refused, "cannot tell whether the disk is in use"},
		{"claimed by another process", usb, &usbdev.Error{Op: "claiming the mass-storage interface", Kind: usbdev.ErrBusy}, failure.Refused, "in use by another usbflash"},
		{"locked", Spec{Scheme: Sim, Raw: "sim:c.img"}, flock.ErrLocked, failure.Refused, "in use by another usbflash"},
		{"other usb failure", usb, &usbdev.Error{Op: "opening", Kind: usbdev.ErrPermission}, failure.Device, "permission"},
		{"sim option", Spec{Scheme: Sim, Raw: "sim:c.img?x=1"}, &sim.SpecError{Spec: "c.img?x=1", Err: errors.New(`unknown option "x"`)}, failure.Usage, "unknown option"},
		{"sim card that cannot be one", Spec{Scheme: Sim, Raw: "sim:c.img"}, &sim.CardError{Path: "c.img", Kind: sim.ErrCardBadSize, What: "is 1000 bytes"}, failure.Usage, "1000 bytes"},
		{"sim card I/O", Spec{Scheme: Sim, Raw: "sim:c.img"}, fmt.Errorf("sim: open card: %w", syscall.EIO), failure.Device, "input/output"},
		{"file I/O", Spec{Scheme: File, Raw: "file:c.img"}, syscall.EIO, failure.Device, "input/output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := openError(tc.t, tc.err)
			if failure.Of(err) != tc.class || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: class %v, want %v saying %q", err, failure.Of(err), tc.class, tc.want)
			}
			// One "in use", and one "cannot tell", each for every kind of
			// target: neither is taken for the other.
			if unknown := errors.Is(tc.err, linuxdisk.ErrInUseUnknown); errors.Is(err, ErrInUseUnknown) != unknown ||
				errors.Is(err, ErrInUse) != errors.Is(tc.err, linuxdisk.ErrInUse) || unknown && len(uses(err)) != 0 {
				t.Errorf("%v: ErrInUse %v, ErrInUseUnknown %v", err, errors.Is(err, ErrInUse), errors.Is(err, ErrInUseUnknown))
			}
		})
	}
}

// TestEjectSaysWhatCannot: a target with no card to eject says what it
// is, as ErrNotEjectable, for the command to word --eject's note.
func TestEjectSaysWhatCannot(t *testing.T) {
	t.Parallel()
	spec, err := Parse("file:" + filepath.Join(t.TempDir(), "c.img") + "?size=1MiB")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.Eject(context.Background())
	var ne *NotEjectableError
	if !errors.Is(err, ErrNotEjectable) || !errors.As(err, &ne) || ne.What != "a file: target" {
		t.Errorf("Eject = %v, want a file: target's ErrNotEjectable", err)
	}
}
