package filedev

import (
	"github.com/usbflash/usbflash/internal/lib/flock"
	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
)

// Refusals filedev shares with the rest of usbflash (a USB reader's kernel
// disk is refused the same way: usbdev.ErrInUse), named here so that an
// importer matches them with errors.Is. Each is a refusal: nothing was
// written.
var (
	// ErrInUse is matched by the refusal of a block device the system
	// uses (mounted, active swap, held by dm or md) or that the kernel
	// would not open exclusively, and by Device.InUse of a disk opened
	// read-only that is so used.
	ErrInUse = linuxdisk.ErrInUse
	// ErrInUseUnknown is matched by the refusal of a block device whose
	// use could not be read (no mount table, sysfs unreadable).
	ErrInUseUnknown = linuxdisk.ErrInUseUnknown
	// ErrLocked is matched by Open's refusal of a target another open
	// (in this process or another) holds: the lock usbflash takes on
	// every target it opens.
	ErrLocked = flock.ErrLocked
)
