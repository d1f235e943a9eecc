package pipeline

import (
	"context"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// ZeroFirst overwrites the first transfer's region of dev (size bytes
// from LBA 0, as Write zeroes it before anything else; 0 means
// DefaultTransferSize; never past the device's end) with zeros, in
// commands the device takes, and syncs. A card written with an image whose
// read-back then differed, or that a repair could not make match, boots
// nothing afterwards: its partition table and boot code are gone, as a
// write stopped before its first transfer leaves them. Commands are sent
// under ctx without its cancellation, as Write sends those in flight: a
// stop request does not leave the region half zeroed. It returns the
// bytes zeroed.
func ZeroFirst(ctx context.Context, dev blockdev.Device, name string, size int) (int64, error) {
	ctx = context.WithoutCancel(ctx)
	name = blockdev.Name(dev, name)
	if size <= 0 {
		size = DefaultTransferSize
	}
	bs := int64(dev.BlockSize())
	region := min(int64(size), blockdev.Capacity(dev)) / bs * bs
	if region <= 0 {
		return 0, nil
	}
	chunk := int64(blockdev.FitTransfer(dev, int(min(region, int64(size)))).Size)
	mem, err := allocBuffers(dev, name, 1, int(chunk))
	if err != nil {
		return 0, err
	}
	defer mem.release()
	zero := mem.bufs[0]
	clear(zero) // device memory comes as it is
	for off := int64(0); off < region; off += chunk {
		p := zero[:min(chunk, region-off)]
		if err := dev.WriteBlocks(ctx, off/bs, p); err != nil {
			return off, &DeviceError{Device: name, Op: OpWrite, LBA: off / bs, Count: int64(len(p)) / bs, BlockSize: int(bs), Err: err}
		}
	}
	if err := dev.Sync(ctx); err != nil {
		return region, &DeviceError{Device: name, Op: OpSync, LBA: -1, BlockSize: int(bs), Err: err}
	}
	return region, nil
}
