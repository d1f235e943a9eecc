package blockdev

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/lib/units"
)

// Fit is a transfer size fitted to a device: the bytes one ReadBlocks or
// WriteBlocks of it moves at most, and why that differs from the size
// asked. FitTransfer makes it.
type Fit struct {
	Size  int   // bytes: a whole number of blocks, at least one, within Limit
	Asked int   // bytes asked for
	Limit int64 // bytes the device takes per command (TransferLimiter); 0: none known
	Block int   // the device's block size, bytes
}

// Capped reports whether the device's limit lowered the size asked.
func (f Fit) Capped() bool { return f.Limit > 0 && int64(f.Asked) > f.Limit }

// Rounded reports whether the size asked was rounded down to whole
// blocks (within the device's limit).
func (f Fit) Rounded() bool { return !f.Capped() && f.Size != f.Asked }

// Note states what the fit changed, naming the device name; "" when it
// changed nothing.
func (f Fit) Note(name string) string {
	switch {
	case f.Capped():
		return fmt.Sprintf("%s takes at most %s per command: using that instead of %s", name, units.FormatSize(f.Limit), units.FormatSize(int64(f.Asked)))
	case f.Rounded():
		return fmt.Sprintf("transfer size rounded to %s, a whole number of %d-byte blocks", units.FormatSize(int64(f.Size)), f.Block)
	}
	return ""
}

// FitTransfer fits a transfer size of want bytes to dev: lowered to what
// a TransferLimiter says it takes per command, and rounded down to whole
// blocks (at least one). It is the one place a transfer size meets a
// device: the engine, the sessions and the notes they give all ask it, so
// a new limit a device has is said once, by its MaxTransfer.
func FitTransfer(dev Device, want int) Fit {
	bs := max(dev.BlockSize(), 1)
	f := Fit{Size: want, Asked: want, Block: bs}
	if l, ok := dev.(TransferLimiter); ok && l.MaxTransfer() > 0 {
		f.Limit = l.MaxTransfer() * int64(bs)
	}
	if f.Capped() {
		f.Size = int(f.Limit)
	}
	f.Size = max(f.Size/bs*bs, bs)
	return f
}
