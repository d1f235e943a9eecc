//go:build linux || darwin || windows

package libusbdl

import "unsafe"

// The C structures of libusb.h this backend reads or writes, laid out as
// the C compiler lays them out on every 32- and 64-bit target libusb runs
// on (natural alignment, no packing). TestLayoutMatchesHeader compiles
// libusb.h and compares every offset.

// transferC is struct libusb_transfer without its trailing flexible array
// of isochronous packet descriptors (allocated with 0 of them). The
// inline libusb_fill_*_transfer helpers of libusb.h are not exported by
// the library: the fields are set here, as they set them.
type transferC struct {
	devHandle     uintptr // libusb_device_handle *
	flags         uint8
	endpoint      uint8
	typ           uint8
	timeout       uint32 // milliseconds, 0: none
	status        int32  // enum libusb_transfer_status
	length        int32
	actualLength  int32
	callback      uintptr // libusb_transfer_cb_fn: none, completions are polled
	userData      uintptr
	buffer        uintptr // unsigned char *
	numIsoPackets int32
}

// deviceDescriptor is struct libusb_device_descriptor (USB 2.0 9.6.1).
type deviceDescriptor struct {
	bLength            uint8
	bDescriptorType    uint8
	bcdUSB             uint16
	bDeviceClass       uint8
	bDeviceSubClass    uint8
	bDeviceProtocol    uint8
	bMaxPacketSize0    uint8
	idVendor           uint16
	idProduct          uint16
	bcdDevice          uint16
	iManufacturer      uint8
	iProduct           uint8
	iSerialNumber      uint8
	bNumConfigurations uint8
}

// configDescriptor is struct libusb_config_descriptor: the standard
// fields, the interfaces, and the bytes of the descriptors libusb did not
// parse (extra).
type configDescriptor struct {
	bLength             uint8
	bDescriptorType     uint8
	wTotalLength        uint16
	bNumInterfaces      uint8
	bConfigurationValue uint8
	iConfiguration      uint8
	bmAttributes        uint8
	maxPower            uint8
	iface               *interfaceC
	extra               *byte
	extraLength         int32
}

// interfaceC is struct libusb_interface: one interface's alternate
// settings.
type interfaceC struct {
	altsetting    *interfaceDescriptor
	numAltsetting int32
}

// interfaceDescriptor is struct libusb_interface_descriptor.
type interfaceDescriptor struct {
	_                  uint8 // bLength
	_                  uint8 // bDescriptorType
	bInterfaceNumber   uint8
	bAlternateSetting  uint8
	bNumEndpoints      uint8
	bInterfaceClass    uint8
	bInterfaceSubClass uint8
	bInterfaceProtocol uint8
	iInterface         uint8
	endpoint           *endpointDescriptor
	extra              *byte
	extraLength        int32
}

// endpointDescriptor is struct libusb_endpoint_descriptor; extra holds
// what follows the endpoint (UAS Pipe Usage, SuperSpeed companion).
type endpointDescriptor struct {
	_                uint8 // bLength
	_                uint8 // bDescriptorType
	bEndpointAddress uint8
	bmAttributes     uint8
	wMaxPacketSize   uint16
	bInterval        uint8
	_                uint8 // bRefresh
	_                uint8 // bSynchAddress
	extra            *byte
	extraLength      int32
}

// versionC is struct libusb_version.
type versionC struct {
	major, minor, micro uint16
	_                   uint16 // nano
	_                   *byte  // rc
	_                   *byte  // describe
}

// Transfer types, flags and statuses (enum libusb_transfer_type,
// libusb_transfer_flags, libusb_transfer_status).
const (
	transferTypeControl    = 0
	transferTypeBulk       = 2
	transferTypeBulkStream = 4

	statusCompleted = 0
	statusError     = 1
	statusTimedOut  = 2
	statusCancelled = 3
	statusStall     = 4
	statusNoDevice  = 5
	statusOverflow  = 6

	// statusInFlight is written into a transfer's status before it is
	// submitted: libusb never gives it (its statuses are 0..6) and writes
	// the real one, on the event thread, when the transfer completes.
	// libusb_submit_transfer leaves the field alone (io.c).
	statusInFlight = -1
)

// controlSetupLen is the size of the setup packet at the start of a
// control transfer's buffer (LIBUSB_CONTROL_SETUP_SIZE).
const controlSetupLen = 8

// cptr reads a C address held in a uintptr as a typed pointer. The memory
// is libusb's, outside Go's heap, so the collector ignores the pointer;
// reading the word through its own address keeps vet's unsafeptr check,
// which rightly doubts uintptr arithmetic, out of it.
func cptr[T any](p uintptr) *T { return *(**T)(unsafe.Pointer(&p)) }

// cbytes is the n bytes at p (C memory), or nil.
func cbytes(p *byte, n int32) []byte {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice(p, n)
}
