//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

/*
#cgo pkg-config: libusb-1.0
#include <libusb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

// zc_open starts a libusb context of our own and opens the device at
// bus/addr in it. The context is ours alone, so the thread that waits for a
// transfer handles its events itself (zc_wait), as libusb_bulk_transfer
// does: no other thread has to wake it.
static int zc_open(int bus, int addr, libusb_context **ctxp, libusb_device_handle **hp) {
	libusb_context *ctx;
	int rc = libusb_init(&ctx);
	if (rc < 0) return rc;
	libusb_device **list;
	ssize_t n = libusb_get_device_list(ctx, &list);
	if (n < 0) { libusb_exit(ctx); return (int)n; }
	rc = LIBUSB_ERROR_NOT_FOUND;
	for (ssize_t i = 0; i < n; i++) {
		if (libusb_get_bus_number(list[i]) == bus && libusb_get_device_address(list[i]) == addr) {
			rc = libusb_open(list[i], hp);
			break;
		}
	}
	libusb_free_device_list(list, 1);
	if (rc < 0) { libusb_exit(ctx); return rc; }
	*ctxp = ctx;
	return 0;
}

// zc_claim selects configuration cfg unless it is active, claims the
// interface and selects its alternate setting when it has several.
static int zc_claim(libusb_device_handle *h, int cfg, int iface, int alt, int alts) {
	int cur = -1;
	int rc = libusb_get_configuration(h, &cur);
	if (rc < 0) return rc;
	if (cur != cfg && (rc = libusb_set_configuration(h, cfg)) < 0) return rc;
	if ((rc = libusb_claim_interface(h, iface)) < 0) return rc;
	if (alts > 1 && (rc = libusb_set_interface_alt_setting(h, iface, alt)) < 0) {
		libusb_release_interface(h, iface);
		return rc;
	}
	return 0;
}

// zc_xfer is one libusb transfer allocated once per open and resubmitted
// for every command. Its callback only sets done: no Go callback, no
// allocation.
typedef struct {
	struct libusb_transfer *t;
	int done;
} zc_xfer;

static void LIBUSB_CALL zc_done(struct libusb_transfer *t) {
	((zc_xfer *)t->user_data)->done = 1;
}

static zc_xfer *zc_new(void) {
	zc_xfer *x = calloc(1, sizeof *x);
	if (x == NULL) return NULL;
	x->t = libusb_alloc_transfer(0);
	if (x->t == NULL) { free(x); return NULL; }
	x->done = 1;
	return x;
}

static void zc_free(zc_xfer *x) {
	libusb_free_transfer(x->t);
	free(x);
}

static int zc_submit(zc_xfer *x, libusb_device_handle *h, unsigned char ep, unsigned char *buf, int len) {
	x->done = 0;
	libusb_fill_bulk_transfer(x->t, h, ep, buf, len, zc_done, x, 0);
	int rc = libusb_submit_transfer(x->t);
	if (rc < 0) x->done = 1;
	return rc;
}

// zc_wait handles the context's events for up to ms milliseconds, or until
// the transfer completes, and says whether it has. Other transfers in
// flight complete along the way (their callbacks set their own flags).
static int zc_wait(libusb_context *ctx, zc_xfer *x, int ms) {
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	if (!x->done) libusb_handle_events_timeout_completed(ctx, &tv, &x->done);
	return x->done;
}


// zc_mem_alloc returns n bytes of usbfs DMA memory (dev != 0) or of
// page-aligned heap memory.
static void *zc_mem_alloc(libusb_device_handle *h, size_t n, int dev) {
	if (dev) return libusb_dev_mem_alloc(h, n);
	size_t r = (n + 4095) & ~(size_t)4095;
	void *p = aligned_alloc(4096, r);
	if (p != NULL) memset(p, 0, r);
	return p;
}

// zc_mem_free frees what zc_mem_alloc returned. usbfs memory is unmapped
// directly: that is all libusb_dev_mem_free does on Linux (op_dev_mem_free),
// and unlike it this needs no handle, so buffers can outlive the handle
// they were mapped on (a port reset that re-enumerated the device).
static void zc_mem_free(void *p, size_t n, int dev) {
	if (dev) munmap(p, n);
	else free(p);
}
*/
import "C"

import (
	"errors"
	"time"
	"unsafe"

	"github.com/google/gousb"
)

// This file holds every C call of the backend. gousb v1.1.3 finds and
// describes devices (List, and the checks before a claim), but an open
// device is driven here, on a libusb context and handle of our own: gousb
// lacks libusb_clear_halt, libusb_attach_kernel_driver, per-interface
// auto-detach, usbfs DMA memory and transfers that can be prepared once and
// resubmitted (it allocates a C buffer per transfer), and it handles events
// on a goroutine of its own, so every completion would cost a wake-up of
// another thread. With our own context the thread that waits for a
// transfer runs libusb_handle_events itself, as the synchronous
// libusb_bulk_transfer does.

// cHandle is an open device on a libusb context of its own. It implements
// usbHandle.
type cHandle struct {
	ctx *C.libusb_context
	h   *C.libusb_device_handle
}

var _ usbHandle = cHandle{}

// openHandle opens the device at bus/address on a new libusb context.
func openHandle(bus, address int) (cHandle, error) {
	var c cHandle
	if err := libusbErr(C.zc_open(C.int(bus), C.int(address), &c.ctx, &c.h)); err != nil {
		return cHandle{}, err
	}
	return c, nil
}

// close closes the handle and ends its context.
func (c cHandle) close() {
	C.libusb_close(c.h)
	C.libusb_exit(c.ctx)
}

// claim selects configuration cfg if another is active, claims interface
// iface and selects alternate setting alt when the interface has several
// (alts), as gousb's Device.Config and Config.Interface do.
func (c cHandle) claim(cfg, iface, alt, alts int) error {
	return libusbErr(C.zc_claim(c.h, C.int(cfg), C.int(iface), C.int(alt), C.int(alts)))
}

// release releases the interface.
func (c cHandle) release(iface int) error {
	return libusbErr(C.libusb_release_interface(c.h, C.int(iface)))
}

// control is a synchronous control transfer (libusb_control_transfer) of
// data, bounded by timeout.
func (c cHandle) control(rType, request uint8, value, index uint16, data []byte, timeout time.Duration) (int, error) {
	var p *C.uchar
	if len(data) > 0 {
		// Go memory is fine here: libusb copies it into its own setup
		// buffer and is done with it when the call returns.
		p = (*C.uchar)(unsafe.Pointer(unsafe.SliceData(data)))
	}
	rc := C.libusb_control_transfer(c.h, C.uint8_t(rType), C.uint8_t(request), C.uint16_t(value), C.uint16_t(index),
		p, C.uint16_t(len(data)), C.uint(timeout/time.Millisecond))
	if rc < 0 {
		return 0, gousb.Error(rc)
	}
	return int(rc), nil
}

// libusbErr turns a libusb return code into gousb's error type, so that one
// mapping (errmap_cgo.go) serves both gousb's calls and ours.
func libusbErr(rc C.int) error {
	if rc >= 0 {
		return nil
	}
	return gousb.Error(rc)
}

// clearHalt is libusb_clear_halt: on Linux the USBDEVFS_CLEAR_HALT ioctl,
// whose kernel side (usb_clear_halt) sends CLEAR_FEATURE(ENDPOINT_HALT) and
// then resets the host's endpoint state, data toggle included. See
// Device.ClearHalt for the source references. It blocks for at most the
// kernel's USB_CTRL_SET_TIMEOUT (5 s).
func (c cHandle) clearHalt(ep uint8) error {
	return libusbErr(C.libusb_clear_halt(c.h, C.uchar(ep)))
}

// resetDevice is libusb_reset_device. On Linux (op_reset_device) libusb
// releases the interfaces this handle claimed, issues USBDEVFS_RESET, and
// claims them again with USBDEVFS_DISCONNECT_CLAIM, so the kernel driver does
// not get the interface in between. It returns LIBUSB_ERROR_NOT_FOUND when
// the device re-enumerated (descriptors changed) or could not be re-claimed.
func (c cHandle) resetDevice() error {
	return libusbErr(C.libusb_reset_device(c.h))
}

// setAutoDetach makes libusb detach the kernel driver atomically while
// claiming (USBDEVFS_DISCONNECT_CLAIM) for this handle only. NOT_SUPPORTED
// (not Linux) is not an error: there is nothing to detach.
func (c cHandle) setAutoDetach(on bool) error {
	v := C.int(0)
	if on {
		v = 1
	}
	err := libusbErr(C.libusb_set_auto_detach_kernel_driver(c.h, v))
	if errors.Is(err, gousb.ErrorNotSupported) {
		return nil
	}
	return err
}

// kernelDriverActive tells whether a kernel driver (other than usbfs) is
// bound to the interface.
func (c cHandle) kernelDriverActive(iface int) (bool, error) {
	rc := C.libusb_kernel_driver_active(c.h, C.int(iface))
	if rc < 0 {
		if gousb.Error(rc) == gousb.ErrorNotSupported {
			return false, nil
		}
		return false, gousb.Error(rc)
	}
	return rc == 1, nil
}

// attachKernelDriver gives the interface back to the kernel (USBDEVFS_CONNECT).
// NOT_FOUND means no driver wanted it and BUSY that one already has it:
// neither is a failure to report.
func (c cHandle) attachKernelDriver(iface int) error {
	err := libusbErr(C.libusb_attach_kernel_driver(c.h, C.int(iface)))
	switch {
	case errors.Is(err, gousb.ErrorNotFound), errors.Is(err, gousb.ErrorBusy),
		errors.Is(err, gousb.ErrorNotSupported), errors.Is(err, gousb.ErrorNoDevice):
		return nil
	}
	return err
}

// memAlloc returns n bytes of C memory: usbfs DMA memory with zeroCopy
// (libusb_dev_mem_alloc, Linux >= 4.6: URBs in it are sent from those pages
// without a copy), else page-aligned heap memory. It returns nil when the
// memory is refused (usbfs_memory_mb, no contiguous pages, not Linux).
func (c cHandle) memAlloc(n int, zeroCopy bool) []byte {
	p := C.zc_mem_alloc(c.h, C.size_t(n), boolInt(zeroCopy))
	if p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(p), n)
}

// memFree frees memory from memAlloc.
func (c cHandle) memFree(b []byte, zeroCopy bool) {
	if len(b) > 0 {
		C.zc_mem_free(unsafe.Pointer(unsafe.SliceData(b)), C.size_t(len(b)), boolInt(zeroCopy))
	}
}

// newTransfer allocates one bulk transfer (libusb_alloc_transfer).
func (c cHandle) newTransfer() (transfer, error) {
	x := C.zc_new()
	if x == nil {
		return nil, gousb.ErrorNoMem
	}
	return &cTransfer{ctx: c.ctx, h: c.h, x: x}, nil
}

// cTransfer is a transfer allocated once and resubmitted.
type cTransfer struct {
	ctx *C.libusb_context
	h   *C.libusb_device_handle
	x   *C.zc_xfer
}

// submit starts a bulk transfer of buf on ep. buf must be C memory from
// memAlloc: libusb keeps the pointer after the call returns, which the cgo
// rules forbid for Go memory.
func (t *cTransfer) submit(ep uint8, buf []byte) error {
	return libusbErr(C.zc_submit(t.x, t.h, C.uchar(ep), (*C.uchar)(unsafe.Pointer(unsafe.SliceData(buf))), C.int(len(buf))))
}

// wait handles events for up to ms milliseconds, until the transfer
// completes, and reports whether it has.
func (t *cTransfer) wait(ms int) bool {
	// The flag is read without a cgo call when the callback already ran
	// (an OUT transfer completed while the one before it was waited for).
	return t.x.done != 0 || C.zc_wait(t.ctx, t.x, C.int(ms)) != 0
}

// cancel asks libusb to cancel the transfer; it still completes, with
// LIBUSB_TRANSFER_CANCELLED, and must be waited for.
func (t *cTransfer) cancel() { C.libusb_cancel_transfer(t.x.t) }

// result is the outcome of the completed transfer: the bytes moved and,
// unless it completed, its libusb status as gousb's TransferStatus (the
// values are libusb's enum).
func (t *cTransfer) result() (int, error) {
	// Plain reads of the C struct: no cgo call, and the transfer is
	// complete, so libusb no longer writes it.
	n := int(t.x.t.actual_length)
	if st := t.x.t.status; st != C.LIBUSB_TRANSFER_COMPLETED {
		return n, gousb.TransferStatus(st)
	}
	return n, nil
}

// free releases the transfer; it must not be in flight.
func (t *cTransfer) free() {
	if t.x != nil {
		C.zc_free(t.x)
		t.x = nil
	}
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
