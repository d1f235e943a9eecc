//go:build linux

package libusbdl

import (
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// devMemSystem: Linux's usbfs hands out memory it sends without a copy.
const devMemSystem = true

// devMemFree unmaps device memory: all libusb_dev_mem_free does on Linux
// (op_dev_mem_free), without the handle, so a buffer can outlive the
// handle it was mapped on (a reset that re-enumerated the device).
func devMemFree(b []byte) {
	if len(b) > 0 {
		_ = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
	}
}

// devMemBudget is how much device memory buffers may take: the kernel's
// bound on all usbfs memory (usbfs_memory_mb, 16 MiB by default), less
// room for the transfers from other memory in flight and the commands,
// which count against the same bound.
func devMemBudget(opts usbdev.OpenOptions) int64 {
	limit := int64(16 << 20)
	if b, err := os.ReadFile("/sys/module/usbcore/parameters/usbfs_memory_mb"); err == nil {
		if mb, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && mb >= 0 {
			limit = mb << 20
		}
	}
	if limit == 0 {
		return 1 << 62 // no bound
	}
	return limit - int64(opts.OutStreamDepth)*int64(opts.OutStreamChunk) - 64<<10
}
