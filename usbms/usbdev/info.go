package usbdev

import (
	"fmt"
	"strconv"
	"strings"
)

// Mass-storage interface codes (USB Mass Storage Class overview, 2.x).
const (
	ClassMassStorage = 0x08
	SubclassSCSI     = 0x06 // SCSI transparent command set
	ProtocolBOT      = 0x50 // Bulk-Only Transport
	ProtocolUAS      = 0x62 // USB Attached SCSI
)

// Speed is the negotiated bus speed, numbered as libusb's enum
// libusb_speed so the cgo build converts without a table.
type Speed int

// Bus speeds.
const (
	SpeedUnknown   Speed = 0
	SpeedLow       Speed = 1
	SpeedFull      Speed = 2
	SpeedHigh      Speed = 3
	SpeedSuper     Speed = 4
	SpeedSuperPlus Speed = 5
)

func (s Speed) String() string {
	switch s {
	case SpeedLow:
		return "low speed (1.5 Mbit/s)"
	case SpeedFull:
		return "full speed (12 Mbit/s)"
	case SpeedHigh:
		return "high speed (480 Mbit/s)"
	case SpeedSuper:
		return "SuperSpeed (5 Gbit/s)"
	case SpeedSuperPlus:
		return "SuperSpeed+ (10 Gbit/s)"
	default:
		return "unknown speed"
	}
}

// Info describes one mass-storage interface (one configuration, interface
// number and alternate setting) of one attached device. It is what List
// returns and what Open takes.
type Info struct {
	Bus     int   // USB bus number
	Address int   // device address on that bus; changes when the device re-enumerates
	Port    []int // port numbers from the root hub down, e.g. [2 3]
	// PortPath is the sysfs name of the device, "BUS-P1.P2..." (e.g. "1-2.3").
	// Unlike Address it survives a reset, so re-opening uses it.
	PortPath string

	VID, PID uint16
	// BCDDevice is the device descriptor's bcdDevice (release number):
	// quirk tables name readers by VID, PID and a range of it.
	BCDDevice    uint16
	Manufacturer string
	Product      string
	Serial       string
	// StringsNote says why Manufacturer/Product/Serial are empty when the
	// device could not be asked (e.g. no permission); empty otherwise.
	StringsNote string
	Speed       Speed

	Config     int   // bConfigurationValue
	Interface  int   // bInterfaceNumber
	AltSetting int   // bAlternateSetting
	SubClass   uint8 // SubclassSCSI, or another command set (BOTSubclass)
	Protocol   uint8 // ProtocolBOT or ProtocolUAS (or another, unsupported)

	BulkIn           uint8 // endpoint address, 0x81..0x8f
	BulkOut          uint8 // endpoint address, 0x01..0x0f
	BulkInMaxPacket  int
	BulkOutMaxPacket int

	// UAS is the interface's USB Attached SCSI alternate setting, when
	// it has one: the only one (Protocol is ProtocolUAS then) or one
	// beside Bulk-Only.
	UAS UASSetting

	// Supported is true for an interface usbflash drives (SCSI over
	// Bulk-Only Transport, or over UAS with its four pipes); Reason says
	// why not otherwise (another subclass, missing endpoints).
	Supported bool
	Reason    string
}

// UASSetting is a UAS alternate setting: its number and its four pipes,
// found by their Pipe Usage descriptors.
type UASSetting struct {
	Alt                              int
	Command, Status, DataIn, DataOut uint8 // endpoint addresses; 0 when not found
	// MaxStreams is the bulk streams the status and data pipes allow
	// (SuperSpeed endpoint companion); 0 below SuperSpeed.
	MaxStreams int
}

// Present reports whether the setting was found with all four pipes.
func (u UASSetting) Present() bool {
	return u.Command != 0 && u.Status != 0 && u.DataIn != 0 && u.DataOut != 0
}

// HasBOT reports whether the interface offers Bulk-Only Transport.
func (i Info) HasBOT() bool { return BOTSubclass(i.SubClass) && i.Protocol == ProtocolBOT }

// FormatPortPath renders a bus and port chain the way Linux names the device
// in /sys/bus/usb/devices: "1-2.3". A root hub (no ports) is "usb1".
func FormatPortPath(bus int, port []int) string {
	if len(port) == 0 {
		return "usb" + strconv.Itoa(bus)
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(bus))
	for i, p := range port {
		if i == 0 {
			b.WriteByte('-')
		} else {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(p))
	}
	return b.String()
}

// ParsePortPath is the inverse of FormatPortPath for device names
// ("1-2.3"); it rejects root hubs and anything else.
func ParsePortPath(s string) (bus int, port []int, err error) {
	busStr, rest, ok := strings.Cut(s, "-")
	if !ok || rest == "" {
		return 0, nil, fmt.Errorf("port path %q: want BUS-PORT[.PORT...], e.g. 1-2.3", s)
	}
	bus, err = strconv.Atoi(busStr)
	if err != nil || bus < 0 {
		return 0, nil, fmt.Errorf("port path %q: bad bus number %q", s, busStr)
	}
	for _, f := range strings.Split(rest, ".") {
		p, err := strconv.Atoi(f)
		if err != nil || p < 1 || p > 255 {
			return 0, nil, fmt.Errorf("port path %q: bad port number %q", s, f)
		}
		port = append(port, p)
	}
	return bus, port, nil
}

// DevNode is the usbfs node libusb opens for this device.
func (i Info) DevNode() string {
	return fmt.Sprintf("/dev/bus/usb/%03d/%03d", i.Bus, i.Address)
}

// String names the device for messages: identity first (what the user sees
// on the label and in `usbflash list`), then where it sits.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%04x:%04x", i.VID, i.PID)
	if i.Product != "" {
		fmt.Fprintf(&b, " %q", i.Product)
	}
	if i.Serial != "" {
		fmt.Fprintf(&b, " serial %s", i.Serial)
	}
	fmt.Fprintf(&b, " (bus %d address %d, port %s", i.Bus, i.Address, i.PortPath)
	if i.Config != 0 || i.Interface != 0 || i.AltSetting != 0 {
		fmt.Fprintf(&b, ", config %d interface %d alt %d", i.Config, i.Interface, i.AltSetting)
	}
	b.WriteByte(')')
	return b.String()
}

// SysfsName is the Linux sysfs name of this interface: "1-2.3:1.0".
func (i Info) SysfsName() string {
	return fmt.Sprintf("%s:%d.%d", i.PortPath, i.Config, i.Interface)
}

// Command-set subclasses other than SCSI transparent that Linux drives over
// Bulk-Only Transport.
const (
	SubclassRBC   = 0x01 // reduced block commands: SCSI as it is
	Subclass8020i = 0x02 // ATAPI (SFF-8020i, MMC-2)
	SubclassQIC   = 0x03 // QIC-157 tapes
	Subclass8070i = 0x05 // ATAPI removable (SFF-8070i)
)

// BOTSubclass reports whether usbflash drives an interface of this
// subclass over Bulk-Only Transport, as Linux's usb-storage does: SCSI
// transparent (06) and RBC (01) as they are, SFF-8020i (02), QIC-157 (03)
// and SFF-8070i (05) with CDBs padded to 12 bytes.
func BOTSubclass(subclass uint8) bool {
	switch subclass {
	case SubclassSCSI, SubclassRBC, Subclass8020i, SubclassQIC, Subclass8070i:
		return true
	}
	return false
}

// ReasonUASOnLibusb is why the libusb backend lists a UAS-only interface
// as not supported.
const ReasonUASOnLibusb = "speaks only UAS (USB Attached SCSI), which the libusb backend does not drive (gousb has no bulk streams); the usbfs backend, the default Linux build, does"

// Classify decides whether an interface with these codes is one usbflash
// can drive, and if not, why: both backends list interfaces by it.
func Classify(subclass, protocol uint8) (supported bool, reason string) {
	switch {
	case BOTSubclass(subclass) && protocol == ProtocolBOT:
		return true, ""
	case subclass == SubclassSCSI && protocol == ProtocolUAS:
		return true, ""
	default:
		return false, fmt.Sprintf("mass-storage subclass 0x%02x protocol 0x%02x is not SCSI, RBC or ATAPI over Bulk-Only Transport (08/06/50, 08/01/50, 08/02/50, 08/03/50, 08/05/50)", subclass, protocol)
	}
}
