package usbms

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// SettingTransport is the setting that chooses between Bulk-Only and UAS
// (TransportAuto, TransportBOT, TransportUAS): an error about it is a
// *failure.SettingError naming it.
const SettingTransport failure.Setting = "transport"

// SettingQueueDepth is the setting that gives TransportOptions.QueueDepth:
// an error about it is a *failure.SettingError naming it.
const SettingQueueDepth failure.Setting = "queue depth"

// Values of SettingTransport.
const (
	// TransportAuto takes UAS where the reader offers only UAS, and
	// Bulk-Only where it offers both (ChooseTransport says why).
	TransportAuto = "auto"
	TransportBOT  = "bot"
	TransportUAS  = "uas"
)

// ErrUnknownTransport is matched by the refusal of a value
// SettingTransport does not take.
var ErrUnknownTransport = failure.New(failure.Usage, "no such transport")

// CheckTransportSetting refuses a value SettingTransport does not take
// (ErrUnknownTransport); "" is TransportAuto.
func CheckTransportSetting(s string) error {
	switch s {
	case "", TransportAuto, TransportBOT, TransportUAS:
		return nil
	}
	return &failure.SettingError{Setting: SettingTransport, Err: fmt.Errorf("%q: %w: want auto, bot or uas", s, ErrUnknownTransport)}
}

// Offer is what a reader's interface offers, and what decides between
// Bulk-Only and UAS.
type Offer struct {
	BOT, UAS bool
	VID, PID uint16
	Speed    usbdev.Speed
	// MaxStreams is the bulk streams the UAS pipes allow (0 below
	// SuperSpeed, or when unknown).
	MaxStreams int
	// Quirks and UASQuirks are the reader's quirk flags as Bulk-Only
	// (ResolveQuirks) and as UAS (ResolveUASQuirks) would drive it:
	// QuirkIgnoreUAS in either passes UAS over, as Linux's uas-detect
	// reads the flags of whichever driver's table named the reader.
	Quirks, UASQuirks Quirks
}

// OfferOf is what an interface the backend listed offers, with its quirk
// flags from both tables and the overrides o. A backend that does not
// drive UAS lists no UAS setting (Info.UAS) and refuses a UAS-only
// interface, so the offer has no UAS then.
func OfferOf(info usbdev.Info, o QuirkOverrides) Offer {
	return Offer{BOT: info.HasBOT(), UAS: info.UAS.Present(), VID: info.VID, PID: info.PID,
		Speed: info.Speed, MaxStreams: info.UAS.MaxStreams,
		Quirks: readerQuirks(info, o).Flags, UASQuirks: readerUASQuirks(info, o).Flags}
}

// Choice is the transport chosen for a reader.
type Choice struct {
	UAS bool
	// Why says why Bulk-Only was taken where UAS was offered ("" when
	// not).
	Why string
	// Quirks are flags the choice brings (QuirkMaxSectors240 for an
	// ASMedia bridge on UAS), to add to the reader's.
	Quirks Quirks
	// Both: the reader offers Bulk-Only and UAS, so either can be driven
	// (bench measures both).
	Both bool
}

// ErrTransportNotOffered means the setting asks for a transport the
// reader does not offer.
var ErrTransportNotOffered = failure.New(failure.Usage, "the reader does not offer that transport")

// WhyBOTOverUAS is why auto takes Bulk-Only where a reader offers both.
const WhyBOTOverUAS = "auto takes Bulk-Only where both are offered: UAS measured no clear gain"

// ChooseTransport picks the transport of a reader by the setting. Auto
// takes UAS where it is the only transport offered, and Bulk-Only where
// the reader offers both: usbflash's UAS measured level with its
// Bulk-Only at 4 MiB transfers and 3-25% ahead at 1 MiB (QEMU usb-uas and
// usb-storage, docs/performance.md), too little to prefer a bridge's UAS,
// which is where Linux needs IGNORE_UAS quirks, and SD readers gain
// nothing from queued commands (the card is the limit). bench measures both on a
// reader that offers both; one where UAS is faster is driven with it by
// the setting. Where UAS is the only choice it is taken, except
// where Linux's uas would not bind either (IGNORE_UAS, and the ASMedia
// bridges 174c:5106 and 174c:55aa below SuperSpeed or with 32 streams,
// uas-detect.h) and there is Bulk-Only. An ASMedia bridge on UAS gets
// QuirkMaxSectors240, as Linux gives it. bot and uas force one; a reader
// that lacks it is an error.
func ChooseTransport(setting string, o Offer) (Choice, error) {
	c, err := chooseTransport(setting, o)
	c.Both = err == nil && o.BOT && o.UAS
	return c, err
}

func chooseTransport(setting string, o Offer) (Choice, error) {
	if err := CheckTransportSetting(setting); err != nil {
		return Choice{}, err
	}
	var c Choice
	if o.VID == 0x174c && (o.PID == 0x5106 || o.PID == 0x55aa) && o.Speed >= usbdev.SpeedSuper {
		c.Quirks = QuirkMaxSectors240
	}
	switch setting {
	case TransportBOT:
		if !o.BOT {
			return Choice{}, &failure.SettingError{Setting: SettingTransport, Err: fmt.Errorf("%q: %w: it speaks only UAS (USB Attached SCSI)", setting, ErrTransportNotOffered)}
		}
		return Choice{}, nil
	case TransportUAS:
		if !o.UAS {
			return Choice{}, &failure.SettingError{Setting: SettingTransport, Err: fmt.Errorf("%q: %w: it offers no UAS interface this backend drives", setting, ErrTransportNotOffered)}
		}
		c.UAS = true
		return c, nil
	}
	if !o.UAS {
		return Choice{}, nil
	}
	why := ""
	switch {
	case (o.Quirks|o.UASQuirks)&QuirkIgnoreUAS != 0:
		why = "its quirks say IGNORE_UAS"
	case c.Quirks != 0 && o.MaxStreams == 32:
		why = "an ASMedia bridge with 32 streams (ASM1051), which Linux drives over Bulk-Only"
	case o.VID == 0x174c && (o.PID == 0x5106 || o.PID == 0x55aa) && o.Speed < usbdev.SpeedSuper:
		why = "an ASMedia bridge below SuperSpeed, which Linux drives over Bulk-Only"
	case o.BOT:
		why = WhyBOTOverUAS
	}
	if why != "" && o.BOT {
		return Choice{Why: why}, nil
	}
	c.UAS = true
	return c, nil
}
