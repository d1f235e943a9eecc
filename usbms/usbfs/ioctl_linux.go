//go:build linux

package usbfs

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ioctls of linux/usbdevice_fs.h. The numbers follow the generic _IOC
// encoding (asm-generic/ioctl.h), which amd64, 386, arm, arm64 and riscv64
// share; mips, powerpc and sparc encode differently and are not supported.
const (
	iocNone  = 0
	iocWrite = 1
	iocRead  = 2
)

func ioc(dir, nr, size uintptr) uintptr {
	return dir<<30 | size<<16 | 'U'<<8 | nr
}

// ctrlTransfer is struct usbdevfs_ctrltransfer.
type ctrlTransfer struct {
	RequestType uint8
	Request     uint8
	Value       uint16
	Index       uint16
	Length      uint16
	Timeout     uint32 // milliseconds
	Data        unsafe.Pointer
}

// setInterface is struct usbdevfs_setinterface.
type setInterface struct {
	Interface  uint32
	AltSetting uint32
}

// getDriver is struct usbdevfs_getdriver.
type getDriver struct {
	Interface uint32
	Driver    [256]byte
}

// disconnectClaim is struct usbdevfs_disconnect_claim.
type disconnectClaim struct {
	Interface uint32
	Flags     uint32
	Driver    [256]byte
}

// ioctlArg is struct usbdevfs_ioctl (USBDEVFS_IOCTL wraps another ioctl
// for one interface's driver).
type ioctlArg struct {
	Ifno      int32
	IoctlCode int32
	Data      unsafe.Pointer
}

// urb is struct usbdevfs_urb without iso packet descriptors. Its address
// is what the kernel hands back at reap time and where it writes status
// and actual length, so a urb must not move while submitted: it lives on
// the heap, allocated once per open.
type urb struct {
	Type         uint8
	Endpoint     uint8
	Status       int32
	Flags        uint32
	Buffer       unsafe.Pointer
	BufferLength int32
	ActualLength int32
	StartFrame   int32
	NumPackets   int32 // union with stream_id
	ErrorCount   int32
	Signr        uint32
	UserContext  uintptr
}

var (
	ioctlControl         = ioc(iocRead|iocWrite, 0, unsafe.Sizeof(ctrlTransfer{}))
	ioctlSetInterface    = ioc(iocRead, 4, unsafe.Sizeof(setInterface{}))
	ioctlGetDriver       = ioc(iocWrite, 8, unsafe.Sizeof(getDriver{}))
	ioctlSubmitURB       = ioc(iocRead, 10, unsafe.Sizeof(urb{}))
	ioctlDiscardURB      = ioc(iocNone, 11, 0)
	ioctlReapURB         = ioc(iocWrite, 12, unsafe.Sizeof(uintptr(0)))
	ioctlReapURBNDelay   = ioc(iocWrite, 13, unsafe.Sizeof(uintptr(0)))
	ioctlReleaseIntf     = ioc(iocRead, 16, unsafe.Sizeof(uint32(0)))
	ioctlIoctl           = ioc(iocRead|iocWrite, 18, unsafe.Sizeof(ioctlArg{}))
	ioctlReset           = ioc(iocNone, 20, 0)
	ioctlClearHalt       = ioc(iocRead, 21, unsafe.Sizeof(uint32(0)))
	ioctlConnect         = ioc(iocNone, 23, 0)
	ioctlGetCapabilities = ioc(iocRead, 26, unsafe.Sizeof(uint32(0)))
	ioctlDisconnectClaim = ioc(iocRead, 27, unsafe.Sizeof(disconnectClaim{}))
)

// URB types and flags.
const (
	urbTypeBulk = 3

	urbShortNotOK       = 0x01
	urbBulkContinuation = 0x04
)

// Capabilities (USBDEVFS_GET_CAPABILITIES).
const (
	capZeroPacket       = 0x01
	capBulkContinuation = 0x02
	capNoPacketSizeLim  = 0x04
	capBulkScatterGath  = 0x08
	capReapAfterDisconn = 0x10
	capMmap             = 0x20
	capDropPrivileges   = 0x40
)

// USBDEVFS_DISCONNECT_CLAIM flags.
const (
	disconnectClaimIfDriver     = 0x01
	disconnectClaimExceptDriver = 0x02
)

// ioctl runs one usbfs ioctl, retrying on EINTR, and returns its result.
func ioctl(fd int, req uintptr, arg unsafe.Pointer) (int, error) {
	for {
		r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return int(r), errno
		}
		return int(r), nil
	}
}

// rawIoctl runs an ioctl that returns without waiting for the device
// (SUBMITURB, REAPURBNDELAY, DISCARDURB) as a raw system call: the runtime
// is not told, so it neither hands the goroutine's processor to another
// thread while the call runs nor keeps sysmon polling for that. A call that
// could sleep until the device answers must not come here (see ioctl).
func rawIoctl(fd int, req uintptr, arg unsafe.Pointer) error {
	for {
		_, _, errno := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return errno
	}
}
