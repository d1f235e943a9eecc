//go:build darwin || windows

package drive

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/pipeline/diskdev"
)

// rawDisk is a macOS or Windows disk: target: the raw disk itself, with
// every method diskdev gives it, and the disk as the system described it.
type rawDisk struct {
	*diskdev.Device
	disk WholeDisk
}

func (d *rawDisk) RawDisk() WholeDisk { return d.disk }

// inUseVolumes is the refusal of a disk whose volumes the system would
// not unmount or lock (why: its own words, naming the programs where it
// does).
func inUseVolumes(t Spec, why error) error {
	return &Error{class: failure.Refused, Target: t.Raw, Uses: []Use{UseOpenFiles}, Err: fmt.Errorf("%w: %w", ErrInUse, why),
		Msg: fmt.Sprintf("target %s is in use: %v; nothing was written", t.Raw, why)}
}
