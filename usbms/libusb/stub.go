//go:build nousb || !cgo || (!libusb && (linux || darwin || windows))

package libusb

import (
	"context"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Device is an opened mass-storage interface. In this build (without
// libusb) none can be opened; every method returns ErrNoUSBSupport.
type Device struct{}

var (
	_ usbms.Endpoint        = (*Device)(nil)
	_ usbms.BufferAllocator = (*Device)(nil)
)

// List would enumerate mass-storage interfaces; this build has no libusb.
func List(ctx context.Context) ([]usbdev.Info, error) { return nil, usbdev.ErrNoUSBSupport }

// Open would claim a mass-storage interface; this build has no libusb.
func Open(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (*Device, error) {
	return nil, usbdev.ErrNoUSBSupport
}

// Info returns the zero Info: no device is ever open in this build.
func (d *Device) Info() usbdev.Info { return usbdev.Info{} }

// BulkOut implements usbms.Endpoint.
func (d *Device) BulkOut(ctx context.Context, p []byte) (int, error) {
	return 0, usbdev.ErrNoUSBSupport
}

// BulkIn implements usbms.Endpoint.
func (d *Device) BulkIn(ctx context.Context, p []byte) (int, error) { return 0, usbdev.ErrNoUSBSupport }

// ClassRequest implements usbms.Endpoint.
func (d *Device) ClassRequest(ctx context.Context, in bool, request uint8, value uint16, data []byte) (int, error) {
	return 0, usbdev.ErrNoUSBSupport
}

// ClearHalt implements usbms.Endpoint.
func (d *Device) ClearHalt(ctx context.Context, in bool) error { return usbdev.ErrNoUSBSupport }

// ResetPort implements usbms.Endpoint.
func (d *Device) ResetPort(ctx context.Context) error { return usbdev.ErrNoUSBSupport }

// AllocBuffers implements usbms.BufferAllocator.
func (d *Device) AllocBuffers(count, size int) ([][]byte, string, func(), error) {
	return nil, "", nil, usbdev.ErrNoUSBSupport
}

// MemoryKind implements usbms.BufferAllocator.
func (d *Device) MemoryKind() string { return usbms.MemoryPageAligned }

// Close does nothing in this build.
func (d *Device) Close() error { return nil }
