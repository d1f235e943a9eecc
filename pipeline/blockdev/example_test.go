package blockdev_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// memDevice is the least a Device is: blocks in memory. It also says the
// most it takes per command (a TransferLimiter), as a USB LUN does.
type memDevice struct {
	blocks []byte
	max    int64 // blocks per command
}

func (m *memDevice) BlockSize() int     { return 512 }
func (m *memDevice) BlockCount() int64  { return int64(len(m.blocks) / 512) }
func (m *memDevice) MaxTransfer() int64 { return m.max }
func (m *memDevice) Sync(context.Context) error {
	return nil
}
func (m *memDevice) ReadBlocks(_ context.Context, lba int64, p []byte) error {
	copy(p, m.blocks[lba*512:])
	return nil
}
func (m *memDevice) WriteBlocks(_ context.Context, lba int64, p []byte) error {
	copy(m.blocks[lba*512:], p)
	return nil
}

// What every user of a device checks alike: whether an image fits, and
// how large a transfer the device takes.
func Example() {
	dev := &memDevice{blocks: make([]byte, 1<<20), max: 128}

	fit := blockdev.FitTransfer(dev, 4<<20)
	fmt.Println(fit.Size, fit.Capped())

	err := blockdev.CheckFits(dev, "mem", 2<<20, true)
	var ce *blockdev.CapacityError
	fmt.Println(errors.As(err, &ce), ce.ImageSize, ce.Capacity)
	fmt.Println(blockdev.CheckFits(dev, "mem", 1<<20, true))
	// Output:
	// 65536 true
	// true 2097152 1048576
	// <nil>
}
