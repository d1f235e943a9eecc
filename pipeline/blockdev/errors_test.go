package blockdev_test

import (
	"errors"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// TestErrorTexts: every error blockdev makes says its class and states
// facts only, as they come from its checks.
func TestErrorTexts(t *testing.T) {
	full := sized{blocks: 64}
	for _, tc := range []struct {
		name string
		err  error
		want failure.Class
	}{
		{"image larger, known up front", blockdev.CheckFits(full, "", 1<<20, true), failure.Refused},
		{"image larger, found at the end", &blockdev.CapacityError{Device: "sim:x", ImageSize: -1, Capacity: 64 * 512, Written: 64 * 512}, failure.Refused},
		{"write-protected before writing", blockdev.CheckWritable(sized{blocks: 8, wp: true}, "usb:1.4/0"), failure.Refused},
		{"write-protected by the medium", blockdev.MarkWriteProtected(errors.New("DATA PROTECT (sense 7/27/00)")), failure.Refused},
		{"bad block", blockdev.MarkBadBlock(errors.New("unrecovered read error (sense 3/11/00)")), failure.Device},
		{"the sentinels", errors.Join(blockdev.ErrWriteProtected, blockdev.ErrBadBlock), failure.Refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			if got := failure.Of(tc.err); got != tc.want {
				t.Errorf("class %v, want %v", got, tc.want)
			}
			factsonly.Check(t, tc.err.Error())
		})
	}
}
