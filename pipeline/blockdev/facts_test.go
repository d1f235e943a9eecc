package blockdev_test

import (
	"errors"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// sized is a device of blocks blocks of 512 bytes, named sim:x, that says
// whether its medium is write-protected.
type sized struct {
	unnamed
	blocks int64
	wp     bool
}

func (d sized) BlockCount() int64    { return d.blocks }
func (d sized) BlockSize() int       { return 512 }
func (d sized) WriteProtected() bool { return d.wp }
func (d sized) String() string       { return "sim:x" }

func TestCheckFits(t *testing.T) {
	dev := sized{blocks: 64} // 32 KiB
	for _, tc := range []struct {
		name  string
		size  int64
		exact bool
		fits  bool
	}{
		{"exact, fits", 64 * 512, true, true},
		{"exact, one byte over", 64*512 + 1, true, false},
		{"hint over never refuses", 1 << 40, false, true},
		{"unknown", -1, true, true},
		{"empty", 0, true, true},
	} {
		err := blockdev.CheckFits(dev, "", tc.size, tc.exact)
		var ce *blockdev.CapacityError
		switch {
		case tc.fits && err != nil:
			t.Errorf("%s: err = %v, want none", tc.name, err)
		case !tc.fits && (!errors.As(err, &ce) || ce.Device != "sim:x" || ce.ImageSize != tc.size || ce.Capacity != 64*512 || ce.Written != 0):
			t.Errorf("%s: err = %#v, want a *CapacityError naming sim:x", tc.name, err)
		case !tc.fits && failure.Of(err) != failure.Refused:
			t.Errorf("%s: class %v, want refused", tc.name, failure.Of(err))
		}
	}
}

func TestCheckWritable(t *testing.T) {
	for _, tc := range []struct {
		dev  blockdev.Device
		name string
		want string // "": writable
	}{
		{sized{blocks: 8}, "", ""},
		{sized{blocks: 8, wp: true}, "", "sim:x is write-protected; nothing was written"},
		{sized{blocks: 8, wp: true}, "usb:1.4/0", "usb:1.4/0 is write-protected; nothing was written"},
		{unnamed{}, "", ""}, // cannot tell: passes
	} {
		err := blockdev.CheckWritable(tc.dev, tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%T %q: %v, want none", tc.dev, tc.name, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want || !errors.Is(err, blockdev.ErrWriteProtected)):
			t.Errorf("%T %q: %v, want %q wrapping ErrWriteProtected", tc.dev, tc.name, err, tc.want)
		}
	}
}

// TestCapacityErrorSaysHowMuch: the two sizes are a true statement even
// when they round alike.
func TestCapacityErrorSaysHowMuch(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *blockdev.CapacityError
		want string
	}{
		{"24 bytes short", &blockdev.CapacityError{Device: "sim:tight.img", ImageSize: 33554456, Capacity: 33554432},
			"image is 33554456 bytes but sim:tight.img holds 33554432 bytes; nothing was written"},
		{"far apart", &blockdev.CapacityError{Device: "sim:x", ImageSize: 8e9, Capacity: 4e9},
			"image is 8.00 GB but sim:x holds 4.00 GB; nothing was written"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
