//go:build !linux && !darwin && !windows

package drive

import (
	"context"
	"fmt"
	"runtime"
)

// listDisks: usbflash opens no raw disk here.
func listDisks(context.Context) ([]WholeDisk, error) { return nil, nil }

// openDisk refuses: usbflash opens whole disks on Linux, macOS and
// Windows only.
func openDisk(_ context.Context, t Spec, _ Options) (*Device, error) {
	return nil, usageKind(t.Raw, ErrDiskUnsupported, fmt.Sprintf("target %s: disk: targets are for Linux, macOS and Windows, not %s", t.Raw, runtime.GOOS))
}
