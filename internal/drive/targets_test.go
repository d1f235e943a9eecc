//go:build unix

package drive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/testtargets"
)

// TestOpenTargets: what opening a sim: or file: target refuses, makes and
// names. The image itself, under any name, is refused before anything is
// opened for writing; a target another usbflash holds is refused, also to
// read; a file: target that can never be one is a usage error and nothing
// is created; sim:PATH?size= makes a blank card also for the commands
// that only read; the name of a slot types back in; an empty slot is
// described, not failed.
func TestOpenTargets(t *testing.T) {
	t.Parallel()
	img := bytes.Repeat([]byte("usbflash image  "), 1<<16)
	td := testtargets.New(t, img)
	dir, image, link, hard, fifo := td.Dir, td.Image, td.Link, td.Hard, td.Fifo
	// A regular file where a device should be (in /dev/shm, a tmpfs
	// inside /dev) is a mistyped device name.
	shm, err := os.CreateTemp("/dev/shm", "usbflash-test-*.img")
	if err != nil {
		t.Fatalf("no /dev/shm to make a regular file in /dev: %v", err)
	}
	shm.Close()
	t.Cleanup(func() { os.Remove(shm.Name()) })
	existing, locked, slots := td.Existing, td.Locked, td.Slots
	for _, tc := range []struct {
		target   string
		readOnly bool
		class    failure.Class // of the error; Unknown: opens
		say      string        // the error says, or the device is named
		created  string        // must not exist afterwards
		size     int64         // the opened device's capacity
	}{
		{target: "sim:" + image, class: failure.Refused, say: "target sim:" + image + " is the image"},
		{target: "sim:" + image + "?size=2MiB", class: failure.Refused, say: " is the image"}, // would extend the image first
		{target: "file:" + image, class: failure.Refused, say: " is the image"},
		{target: "file:" + link, class: failure.Refused, say: " is the image"},
		{target: "sim:" + hard, class: failure.Refused, say: " is the image"},
		{target: "file:" + filepath.Join(dir, ".", "self.img"), class: failure.Refused, say: " is the image"},
		{target: "sim:" + locked, class: failure.Refused, say: "in use by another usbflash"},
		{target: "sim:" + locked, readOnly: true, class: failure.Refused, say: "in use by another usbflash"},
		{target: "sim:" + locked + "?luns=2&lun=1", class: failure.Refused, say: "in use by another usbflash"},
		{target: "file:" + locked, class: failure.Refused, say: "in use by another usbflash"},
		{target: "file:" + dir, class: failure.Usage, say: "is a directory"},
		{target: "file:/dev/null", class: failure.Usage, say: "character device"},
		{target: "file:" + fifo, class: failure.Usage, say: "FIFO"},
		{target: "file:" + filepath.Join(dir, "no", "such.img"), class: failure.Usage, say: "does not exist", created: filepath.Join(dir, "no")},
		{target: "file:/dev/usbflash-test-no-such-disk", class: failure.Usage, say: "no such device", created: "/dev/usbflash-test-no-such-disk"},
		{target: "file:" + existing + "?size=512KiB", class: failure.Usage, say: "refusing to shrink"},
		{target: "file:" + shm.Name() + "?size=1MiB", class: failure.Usage, say: "regular file in /dev"},
		{target: "sim:" + filepath.Join(dir, "fresh.img") + "?size=4MiB", readOnly: true, say: "sim:" + filepath.Join(dir, "fresh.img"), size: 4 << 20},
		{target: "sim:" + slots + "?luns=2&lun=1", say: "sim:" + slots + "/1", size: 2 << 20},
		{target: "sim:" + slots + "/1", say: "sim:" + slots + "/1", size: 2 << 20},
	} {
		spec, err := Parse(tc.target)
		if err != nil {
			t.Fatalf("%s: %v", tc.target, err)
		}
		d, err := Open(context.Background(), spec, Options{Image: image, Force: true, ReadOnly: tc.readOnly, NewFileSize: int64(len(img))})
		if tc.class != failure.Unknown {
			if d != nil {
				d.Close()
			}
			if failure.Of(err) != tc.class || !strings.Contains(err.Error(), tc.say) {
				t.Errorf("%s: %v, class %v, want %v saying %q", tc.target, err, failure.Of(err), tc.class, tc.say)
			}
			if _, serr := os.Stat(tc.created); tc.created != "" && serr == nil {
				t.Errorf("%s: %s was created", tc.target, tc.created)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.target, err)
			continue
		}
		if d.Name != tc.say || d.Capacity() != tc.size {
			t.Errorf("%s: opened as %s of %d bytes, want %s of %d", tc.target, d.Name, d.Capacity(), tc.say, tc.size)
		}
		d.Close()
	}
	if b, err := os.ReadFile(image); err != nil || !bytes.Equal(b, img) {
		t.Errorf("the image changed (%v)", err)
	}
	if st, err := os.Stat(existing); err != nil || st.Size() != 1<<20 {
		t.Errorf("the existing file changed size: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "fresh.img")); err != nil || st.Size() != 4<<20 {
		t.Errorf("the card made read-only: %v, want 4 MiB", err)
	}
	// An empty slot opened to describe it.
	spec, err := Parse("sim:" + existing + "?nomedium=1&vendor=ACME&product=SLOT")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), spec, Options{ReadOnly: true, AllowNoMedium: true})
	if err != nil {
		t.Fatalf("an empty slot: %v", err)
	}
	if s, ok := d.Dev.(EmptySlot); !ok || d.Capacity() != 0 || !s.Slot().NoMedium || s.Slot().Inquiry.Vendor != "ACME" || s.Slot().Inquiry.Product != "SLOT" {
		t.Fatalf("an empty slot: %+v", d)
	}
	d.Close()
}
