package sim

import "fmt"

// lun is the run-time state of one logical unit.
type lun struct {
	cfg       LUN
	medium    Medium
	blockSize int64
	ejected   bool // START STOP UNIT ejected the medium; ResetPort re-detects it
	prevent   bool // PREVENT ALLOW MEDIUM REMOVAL is in force
	sense     sense
	// readSeen is set by the first READ (Misbehaviour.ModePlaceholder);
	// garbageSense makes the next REQUEST SENSE answer junk.
	readSeen, garbageSense bool
	// unitAttention is a UNIT ATTENTION the device raised itself (after
	// ResetPort, a card put in); injected ones live in the fault list.
	unitAttention *sense
	// slot, when set, is where the card comes and goes (OpenSlots).
	slot *slot
}

func newLUN(i int, l LUN, usbSerial string) (*lun, error) {
	if l.BlockSize == 0 {
		l.BlockSize = 512
	}
	if l.BlockSize != 512 && l.BlockSize != 4096 {
		return nil, fmt.Errorf("block size %d: want 512 or 4096", l.BlockSize)
	}
	if l.Blocks < 0 || (l.Blocks == 0 && !l.NoMedium) {
		return nil, fmt.Errorf("capacity of %d blocks: want at least 1 (or NoMedium)", l.Blocks)
	}
	// The byte size must fit in int64 for ReaderAt offsets.
	if l.Blocks > (1<<63-1)/int64(l.BlockSize) {
		return nil, fmt.Errorf("capacity of %d blocks of %d bytes does not fit in 63 bits", l.Blocks, l.BlockSize)
	}
	if l.Vendor == "" {
		l.Vendor = DefaultVendor
	}
	if l.Product == "" {
		l.Product = DefaultProduct
	}
	if l.Revision == "" {
		l.Revision = DefaultRevision
	}
	if l.Serial == "" {
		l.Serial = usbSerial
		if i > 0 {
			l.Serial = fmt.Sprintf("%s-%d", usbSerial, i)
		}
	}
	m := l.Medium
	if m == nil {
		m = NewMemory(l.Blocks * int64(l.BlockSize))
	}
	return &lun{cfg: l, medium: m, blockSize: int64(l.BlockSize)}, nil
}

// present reports whether a medium is in the slot.
func (l *lun) present() bool { return !l.cfg.NoMedium && !l.ejected }
