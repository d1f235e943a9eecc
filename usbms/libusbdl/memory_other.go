//go:build darwin || windows

package libusbdl

import "github.com/usbflash/usbflash/usbms/usbdev"

// devMemSystem: only Linux has device memory; libusb_dev_mem_alloc
// returns nothing elsewhere.
const devMemSystem = false

func devMemFree([]byte) {}

func devMemBudget(usbdev.OpenOptions) int64 { return 0 }
