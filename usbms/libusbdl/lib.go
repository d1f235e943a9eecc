//go:build linux || darwin || windows

package libusbdl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// EnvLibrary names an environment variable that, when set, is the one
// path libusb-1.0 is loaded from (a build of one's own, MacPorts' copy).
const EnvLibrary = "USBFLASH_LIBUSB"

// Library is libusb-1.0 loaded into this process: the entry points this
// backend calls, found by name. A library is never unloaded.
type Library struct {
	// Path is where it was loaded from.
	Path string
	// Major, Minor and Micro are its version (libusb_get_version).
	Major, Minor, Micro int
	fn                  symbols
}

// symbols are the entry points. The required ones are libusb 1.0.16's
// (libusb_get_port_numbers, libusb_set_auto_detach_kernel_driver); the
// others are looked for and used when there: bulk streams (1.0.19, UAS
// at SuperSpeed), device memory and interrupting the event handler
// (1.0.21).
type symbols struct {
	init, exit, getVersion                                            uintptr
	getDeviceList, freeDeviceList, getBusNumber, getDeviceAddress     uintptr
	getPortNumbers, getDeviceSpeed, getDeviceDescriptor               uintptr
	getActiveConfigDescriptor, freeConfigDescriptor                   uintptr
	open, close, getStringDescriptorASCII                             uintptr
	getConfiguration, setConfiguration, claimInterface                uintptr
	releaseInterface, setInterfaceAltSetting                          uintptr
	kernelDriverActive, attachKernelDriver, setAutoDetachKernelDriver uintptr
	clearHalt, resetDevice                                            uintptr
	allocTransfer, freeTransfer, submitTransfer, cancelTransfer       uintptr
	handleEventsTimeoutCompleted                                      uintptr
	interruptEventHandler                                             uintptr // optional
	transferSetStreamID, allocStreams, freeStreams                    uintptr // optional
	devMemAlloc, devMemFree                                           uintptr // optional
}

// bind finds every entry point with sym; a required one missing fails.
func (s *symbols) bind(sym func(string) (uintptr, error)) error {
	for _, e := range []struct {
		p        *uintptr
		name     string
		optional bool
	}{
		{&s.init, "libusb_init", false}, {&s.exit, "libusb_exit", false},
		{&s.getVersion, "libusb_get_version", false},
		{&s.getDeviceList, "libusb_get_device_list", false}, {&s.freeDeviceList, "libusb_free_device_list", false},
		{&s.getBusNumber, "libusb_get_bus_number", false}, {&s.getDeviceAddress, "libusb_get_device_address", false},
		{&s.getPortNumbers, "libusb_get_port_numbers", false}, {&s.getDeviceSpeed, "libusb_get_device_speed", false},
		{&s.getDeviceDescriptor, "libusb_get_device_descriptor", false},
		{&s.getActiveConfigDescriptor, "libusb_get_active_config_descriptor", false},
		{&s.freeConfigDescriptor, "libusb_free_config_descriptor", false},
		{&s.open, "libusb_open", false}, {&s.close, "libusb_close", false},
		{&s.getStringDescriptorASCII, "libusb_get_string_descriptor_ascii", false},
		{&s.getConfiguration, "libusb_get_configuration", false}, {&s.setConfiguration, "libusb_set_configuration", false},
		{&s.claimInterface, "libusb_claim_interface", false}, {&s.releaseInterface, "libusb_release_interface", false},
		{&s.setInterfaceAltSetting, "libusb_set_interface_alt_setting", false},
		{&s.kernelDriverActive, "libusb_kernel_driver_active", false},
		{&s.attachKernelDriver, "libusb_attach_kernel_driver", false},
		{&s.setAutoDetachKernelDriver, "libusb_set_auto_detach_kernel_driver", false},
		{&s.clearHalt, "libusb_clear_halt", false}, {&s.resetDevice, "libusb_reset_device", false},
		{&s.allocTransfer, "libusb_alloc_transfer", false}, {&s.freeTransfer, "libusb_free_transfer", false},
		{&s.submitTransfer, "libusb_submit_transfer", false}, {&s.cancelTransfer, "libusb_cancel_transfer", false},
		{&s.handleEventsTimeoutCompleted, "libusb_handle_events_timeout_completed", false},
		{&s.interruptEventHandler, "libusb_interrupt_event_handler", true},
		{&s.transferSetStreamID, "libusb_transfer_set_stream_id", true},
		{&s.allocStreams, "libusb_alloc_streams", true}, {&s.freeStreams, "libusb_free_streams", true},
		{&s.devMemAlloc, "libusb_dev_mem_alloc", true}, {&s.devMemFree, "libusb_dev_mem_free", true},
	} {
		p, err := sym(e.name)
		if err != nil || p == 0 {
			if e.optional {
				continue
			}
			return fmt.Errorf("no %s in it (libusb 1.0.16 or later has it): %v", e.name, err)
		}
		*e.p = p
	}
	return nil
}

// call calls a C function of the library with integer and pointer
// arguments and returns its first result register, which a caller
// narrows to the C type (an int's upper half is not defined).
func call(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// rc is a libusb function's int result as an error.
func rc(r uintptr) error {
	if c := int32(r); c < 0 {
		return Code(c)
	}
	return nil
}

// candidates are the paths libusb-1.0 is looked for at, in order: the one
// EnvLibrary names alone when set; else beside the executable, then where
// the system's package managers put it.
func candidates(goos, env, exe, path string) []string {
	if env != "" {
		return []string{env}
	}
	dir := ""
	if exe != "" {
		dir = filepath.Dir(exe)
	}
	switch goos {
	case "darwin":
		out := []string{}
		if dir != "" {
			out = append(out, filepath.Join(dir, "libusb-1.0.0.dylib"))
		}
		// Homebrew on Apple silicon, Homebrew on Intel, MacPorts, then
		// dyld's own search (DYLD_LIBRARY_PATH and the fallbacks).
		return append(out, "/opt/homebrew/lib/libusb-1.0.0.dylib", "/usr/local/lib/libusb-1.0.0.dylib",
			"/opt/local/lib/libusb-1.0.0.dylib", "libusb-1.0.0.dylib")
	case "windows":
		// Beside usbflash.exe, then each directory of PATH; never the
		// current directory, whatever it holds.
		out := []string{}
		if dir != "" {
			out = append(out, filepath.Join(dir, "libusb-1.0.dll"))
		}
		for _, d := range filepath.SplitList(path) {
			if d = strings.Trim(d, `"`); d != "" && filepath.IsAbs(d) {
				out = append(out, filepath.Join(d, "libusb-1.0.dll"))
			}
		}
		return out
	default:
		// The dynamic loader's search (ld.so.cache, LD_LIBRARY_PATH).
		return []string{"libusb-1.0.so.0", "libusb-1.0.so"}
	}
}

// Load loads libusb-1.0 from the first of paths that loads and has every
// entry point this backend needs. When none does, the error is of kind
// usbdev.ErrNoLibusb and names every path tried and why it failed.
func Load(paths ...string) (*Library, error) {
	var why []string
	for _, p := range paths {
		l, err := loadFrom(p)
		if err == nil {
			return l, nil
		}
		why = append(why, fmt.Sprintf("%s: %v", p, err))
	}
	return nil, &usbdev.Error{Op: "loading libusb-1.0", Kind: usbdev.ErrNoLibusb,
		Err: errors.New("tried " + strings.Join(why, "; "))}
}

// loadFrom loads the library at path and binds its entry points.
func loadFrom(path string) (*Library, error) {
	h, err := openLibrary(path)
	if err != nil {
		return nil, err
	}
	l := &Library{Path: path}
	if err := l.fn.bind(func(name string) (uintptr, error) { return symbol(h, name) }); err != nil {
		return nil, err
	}
	v := cptr[versionC](call(l.fn.getVersion))
	if v == nil {
		return nil, errors.New("libusb_get_version returned nothing")
	}
	l.Major, l.Minor, l.Micro = int(v.major), int(v.minor), int(v.micro)
	return l, nil
}

// Version is the library's version as libusb writes it, "1.0.26".
func (l *Library) Version() string { return fmt.Sprintf("%d.%d.%d", l.Major, l.Minor, l.Micro) }

// atLeast tells whether the library is version 1.0.micro or later.
func (l *Library) atLeast(micro int) bool {
	return l.Major > 1 || (l.Major == 1 && (l.Minor > 0 || l.Micro >= micro))
}

// system loads the library once per process, from candidates.
var system = sync.OnceValues(func() (*Library, error) {
	exe, _ := os.Executable()
	return Load(candidates(runtime.GOOS, os.Getenv(EnvLibrary), exe, os.Getenv("PATH"))...)
})

// System is libusb-1.0 loaded from where the system keeps it (see
// EnvLibrary), once per process: every List and Open uses it.
func System() (*Library, error) { return system() }

// The entry points transfers and the event thread use (xferAPI).

func (l *Library) newContext() (uintptr, error) {
	var ctx uintptr
	if err := rc(call(l.fn.init, uintptr(unsafe.Pointer(&ctx)))); err != nil {
		return 0, err
	}
	return ctx, nil
}

func (l *Library) exitContext(ctx uintptr) { call(l.fn.exit, ctx) }

func (l *Library) handleEvents(ctx uintptr, tv *timeval) error {
	return rc(call(l.fn.handleEventsTimeoutCompleted, ctx, uintptr(unsafe.Pointer(tv)), 0))
}

func (l *Library) interrupt(ctx uintptr) bool {
	if l.fn.interruptEventHandler == 0 {
		return false
	}
	call(l.fn.interruptEventHandler, ctx)
	return true
}

func (l *Library) allocTransfer() *transferC { return cptr[transferC](call(l.fn.allocTransfer, 0)) }

func (l *Library) freeTransfer(t *transferC) {
	call(l.fn.freeTransfer, uintptr(unsafe.Pointer(t)))
}

func (l *Library) submit(t *transferC) error {
	return rc(call(l.fn.submitTransfer, uintptr(unsafe.Pointer(t))))
}

func (l *Library) cancel(t *transferC) error {
	return rc(call(l.fn.cancelTransfer, uintptr(unsafe.Pointer(t))))
}

func (l *Library) setStreamID(t *transferC, id uint32) {
	call(l.fn.transferSetStreamID, uintptr(unsafe.Pointer(t)), uintptr(id))
}
