package pipeline

import (
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// TestErrorClasses: each error says its class, a wrapper's cause's class
// wins over its own, and every text states facts only.
func TestErrorClasses(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want failure.Class
	}{
		{"too large, known up front", &blockdev.CapacityError{Device: "sim:x", ImageSize: 8 << 20, Capacity: 4 << 20}, failure.Refused},
		{"too large, found at the end", &blockdev.CapacityError{Device: "sim:x", ImageSize: -1, Capacity: 4 << 20, Written: 4 << 20}, failure.Refused},
		{"image shorter than declared", &ImageSizeError{Declared: 4096, Actual: 1024}, failure.Image},
		{"image longer than declared", &ImageSizeError{Declared: 4096, Actual: 8192, Longer: true}, failure.Image},
		{"device", &DeviceError{Device: "sim:x", Op: OpWrite, LBA: 8, Count: 8, BlockSize: 512, Err: errors.New("no answer")}, failure.Device},
		{"sync", &DeviceError{Device: "sim:x", Op: OpSync, LBA: -1, Err: errors.New("no answer")}, failure.Device},
		{"write-protected under a write", &DeviceError{Device: "sim:x", Op: OpWrite, LBA: 8, Count: 8, BlockSize: 512,
			Err: blockdev.MarkWriteProtected(errors.New("DATA PROTECT"))}, failure.Refused},
		{"cancelled under a write", &DeviceError{Device: "sim:x", Op: OpWrite, LBA: 8, Count: 8, BlockSize: 512, Err: context.Canceled}, failure.Interrupted},
		{"difference", &VerifyError{Device: "sim:x", LBA: 8, Offset: 4096, Want: 1, Got: 2}, failure.Verify},
		{"hash difference", &VerifyError{Device: "sim:x", HashOnly: true, Size: 4096}, failure.Verify},
		{"inconsistent reads", &InconsistentError{Err: &VerifyError{Device: "sim:x", HashOnly: true, Size: 4096}}, failure.Verify},
		{"cancelled write", &CancelledError{Device: "sim:x", Phase: PhaseWrite, Bytes: 1 << 20, LBA: 2048, Err: context.Canceled}, failure.Interrupted},
		{"cancelled verify", &CancelledError{Device: "sim:x", Phase: PhaseVerify, Bytes: 1 << 20, LBA: 2048, Err: context.Canceled}, failure.Interrupted},
		{"repair that did not hold", &RepairError{Device: "sim:x", Rounds: 3, Left: []blockdev.Extent{{Off: 4096, Len: 512}},
			First: &VerifyError{Device: "sim:x", LBA: 8, Offset: 4096, Want: 1, Got: 2}}, failure.Verify},
		{"image check after the stream", &ImageCheckError{Device: "sim:x", Err: &ImageSizeError{Declared: 4096, Actual: 1024}}, failure.Image},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := failure.Of(tc.err); got != tc.want {
				t.Errorf("class %v, want %v", got, tc.want)
			}
			factsonly.Check(t, tc.err.Error())
		})
	}
}
