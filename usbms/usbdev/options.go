package usbdev

import "time"

// OpenOptions tune Open. The zero value is the safe default.
type OpenOptions struct {
	// Force skips the check that refuses to take a device whose kernel disk
	// is mounted, swapped on or held by dm/md.
	Force bool
	// CheckDisks, when set, is shown the disks the kernel made from the
	// interface right before the claim takes them from it (even with
	// Force); an error it returns refuses the open and is returned as it
	// is. The disks are read once for it and for the in-use check; the
	// target layer refuses a reader whose disk holds the image this way.
	CheckDisks func([]KernelDisk) error
	// ControlTimeout bounds each control request (class requests); a
	// context deadline that is sooner wins. Zero means 5 s, the kernel's
	// own USB_CTRL_SET_TIMEOUT.
	ControlTimeout time.Duration
	// OutStreamChunk is the size of each transfer of memory that is not
	// from AllocBuffers (copied through a bounce buffer of OutStreamDepth
	// such pieces) or is page-aligned memory from it (see BulkOut). Zero
	// or less means 1 MiB. It is rounded down to a multiple of the
	// endpoint's max packet size so that no short packet ends the device's
	// data phase early.
	OutStreamChunk int
	// OutStreamDepth is how many OUT transfers are in flight at once.
	// Zero or less means 4.
	OutStreamDepth int
	// UAS opens the interface in its UAS alternate setting (Info.UAS),
	// with bulk streams at SuperSpeed, instead of Bulk-Only; an
	// interface that offers only UAS is opened so whatever this says.
	// Backends without UAS ignore it.
	UAS bool
	// ReenumerateTimeout is how long ResetPort waits for a device that
	// re-enumerated to come back at the same port. Zero means 10 s.
	ReenumerateTimeout time.Duration
}

const (
	defaultControlTimeout     = 5 * time.Second
	defaultOutStreamChunk     = 1 << 20
	defaultOutStreamDepth     = 4
	defaultReenumerateTimeout = 10 * time.Second
)

// WithDefaults fills the zero fields, as both backends read them.
func (o OpenOptions) WithDefaults() OpenOptions {
	if o.ControlTimeout <= 0 {
		o.ControlTimeout = defaultControlTimeout
	}
	if o.OutStreamChunk <= 0 {
		o.OutStreamChunk = defaultOutStreamChunk
	}
	if o.OutStreamDepth <= 0 {
		o.OutStreamDepth = defaultOutStreamDepth
	}
	if o.ReenumerateTimeout <= 0 {
		o.ReenumerateTimeout = defaultReenumerateTimeout
	}
	return o
}
