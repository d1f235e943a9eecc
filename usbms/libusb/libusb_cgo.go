//go:build cgo && !nousb

package libusb

/*
#cgo pkg-config: libusb-1.0
#include <libusb.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

// zc_xfer is one libusb transfer allocated once per open and resubmitted for
// every command. Its completion callback runs inside libusb_handle_events on
// gousb's event goroutine and only flips a flag under a mutex: no Go
// callback, no allocation. The Go side waits for the flag in zc_wait.
typedef struct {
	struct libusb_transfer *t;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
} zc_xfer;

static void LIBUSB_CALL zc_done(struct libusb_transfer *t) {
	zc_xfer *x = t->user_data;
	pthread_mutex_lock(&x->mu);
	x->done = 1;
	pthread_cond_signal(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

static zc_xfer *zc_new(void) {
	zc_xfer *x = calloc(1, sizeof *x);
	if (x == NULL) return NULL;
	x->t = libusb_alloc_transfer(0);
	if (x->t == NULL) { free(x); return NULL; }
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&x->cv, &a);
	pthread_condattr_destroy(&a);
	pthread_mutex_init(&x->mu, NULL);
	x->done = 1;
	return x;
}

static void zc_free(zc_xfer *x) {
	libusb_free_transfer(x->t);
	pthread_cond_destroy(&x->cv);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

static int zc_submit(zc_xfer *x, libusb_device_handle *h, unsigned char ep, unsigned char *buf, int len) {
	pthread_mutex_lock(&x->mu);
	x->done = 0;
	pthread_mutex_unlock(&x->mu);
	libusb_fill_bulk_transfer(x->t, h, ep, buf, len, zc_done, x, 0);
	int rc = libusb_submit_transfer(x->t);
	if (rc < 0) {
		pthread_mutex_lock(&x->mu);
		x->done = 1;
		pthread_mutex_unlock(&x->mu);
	}
	return rc;
}

// zc_wait waits up to ms milliseconds for the transfer to complete and says
// whether it has.
static int zc_wait(zc_xfer *x, int ms) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
	pthread_mutex_lock(&x->mu);
	while (!x->done) {
		if (pthread_cond_timedwait(&x->cv, &x->mu, &ts) == ETIMEDOUT) break;
	}
	int d = x->done;
	pthread_mutex_unlock(&x->mu);
	return d;
}

static int zc_status(zc_xfer *x) { return x->t->status; }
static int zc_actual(zc_xfer *x) { return x->t->actual_length; }

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
	"reflect"
	"unsafe"

	"github.com/google/gousb"
)

// This file holds every C call of the backend. gousb v1.1.3 wraps libusb
// but lacks libusb_clear_halt, libusb_attach_kernel_driver, per-interface
// auto-detach, usbfs DMA memory and transfers that can be prepared once and
// resubmitted (it allocates a C buffer per transfer). All of these need the
// libusb_device_handle, which gousb keeps in the unexported field
// Device.handle (device.go: `handle *libusbDevHandle`, a named type for
// C.libusb_device_handle). It is read with reflect; TestGousbHandleLayout
// pins the layout, and Open fails with errHandleLayout when the gousb
// compiled in differs, so there is no second, gousb-only path to reason
// about.
//
// Completions need libusb_handle_events: gousb runs it on its own
// goroutine for the lifetime of its Context (usb.go NewContext ->
// libusb.go handleEvents), and the transfers here belong to that context.

// errHandleLayout says the pinned gousb layout is not the one compiled in.
var errHandleLayout = errors.New("gousb.Device has no field `handle *libusbDevHandle` (gousb version changed?): the libusb device handle is unreachable")

// checkHandleField verifies that gousb.Device still has the field we read.
func checkHandleField() error {
	f, ok := reflect.TypeOf(gousb.Device{}).FieldByName("handle")
	if !ok || f.Type.Kind() != reflect.Pointer {
		return errHandleLayout
	}
	if e := f.Type.Elem(); e.Name() != "libusbDevHandle" || e.PkgPath() != "github.com/google/gousb" {
		return errHandleLayout
	}
	return nil
}

// cHandle is libusb's handle behind an open gousb.Device. It implements
// usbHandle.
type cHandle struct {
	h *C.libusb_device_handle
}

var _ usbHandle = cHandle{}

// rawHandle returns the libusb handle behind an open gousb.Device.
func rawHandle(d *gousb.Device) (cHandle, error) {
	if err := checkHandleField(); err != nil {
		return cHandle{}, err
	}
	if d == nil {
		return cHandle{}, ErrClosed
	}
	// UnsafePointer does not require the field to be exported; the value
	// is a C pointer (libusb owns the memory), so passing it back to C
	// obeys the cgo pointer rules.
	p := reflect.ValueOf(d).Elem().FieldByName("handle").UnsafePointer()
	if p == nil {
		return cHandle{}, ErrClosed
	}
	return cHandle{(*C.libusb_device_handle)(p)}, nil
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
	return &cTransfer{h: c.h, x: x}, nil
}

// cTransfer is a transfer allocated once and resubmitted.
type cTransfer struct {
	h *C.libusb_device_handle
	x *C.zc_xfer
}

// submit starts a bulk transfer of buf on ep. buf must be C memory from
// memAlloc: libusb keeps the pointer after the call returns, which the cgo
// rules forbid for Go memory.
func (t *cTransfer) submit(ep uint8, buf []byte) error {
	return libusbErr(C.zc_submit(t.x, t.h, C.uchar(ep), (*C.uchar)(unsafe.Pointer(unsafe.SliceData(buf))), C.int(len(buf))))
}

// wait waits up to ms milliseconds for completion and reports whether the
// transfer completed.
func (t *cTransfer) wait(ms int) bool { return C.zc_wait(t.x, C.int(ms)) != 0 }

// cancel asks libusb to cancel the transfer; it still completes, with
// LIBUSB_TRANSFER_CANCELLED, and must be waited for.
func (t *cTransfer) cancel() { C.libusb_cancel_transfer(t.x.t) }

// result is the outcome of the completed transfer: the bytes moved and,
// unless it completed, its libusb status as gousb's TransferStatus (the
// values are libusb's enum).
func (t *cTransfer) result() (int, error) {
	n := int(C.zc_actual(t.x))
	if st := C.zc_status(t.x); st != C.LIBUSB_TRANSFER_COMPLETED {
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
