package usbms_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

func TestChooseTransport(t *testing.T) {
	both := usbms.Offer{BOT: true, UAS: true, VID: 0x0bda, PID: 0x9210, Speed: usbdev.SpeedSuper, MaxStreams: 16}
	uasOnly := usbms.Offer{UAS: true, VID: 0x46f4, PID: 3, Speed: usbdev.SpeedSuper, MaxStreams: 16}
	botOnly := usbms.Offer{BOT: true, VID: 0x46f4, PID: 1, Speed: usbdev.SpeedHigh}
	with := func(o usbms.Offer, f func(*usbms.Offer)) usbms.Offer { f(&o); return o }
	asm := func(speed usbdev.Speed, streams int) usbms.Offer {
		return usbms.Offer{BOT: true, UAS: true, VID: 0x174c, PID: 0x55aa, Speed: speed, MaxStreams: streams}
	}
	cases := []struct {
		name    string
		setting string
		offer   usbms.Offer
		uas     bool
		why     string
		quirks  usbms.Quirks
		refused bool
	}{
		{name: "both: auto takes BOT", setting: "auto", offer: both, why: "no clear gain"},
		{name: "both: empty is auto", setting: "", offer: both, why: "no clear gain"},
		{name: "both: uas forced", setting: "uas", offer: both, uas: true},
		{name: "both: bot forced", setting: "bot", offer: both},
		{name: "UAS only: auto", setting: "auto", offer: uasOnly, uas: true},
		{name: "UAS only: bot refused", setting: "bot", offer: uasOnly, refused: true},
		{name: "BOT only: auto", setting: "auto", offer: botOnly},
		{name: "BOT only: uas refused", setting: "uas", offer: botOnly, refused: true},
		{name: "IGNORE_UAS", setting: "auto", offer: with(both, func(o *usbms.Offer) { o.Quirks = usbms.QuirkIgnoreUAS }), why: "IGNORE_UAS"},
		{name: "IGNORE_UAS from uas's table", setting: "auto", offer: with(both, func(o *usbms.Offer) { o.UASQuirks = usbms.QuirkIgnoreUAS }), why: "IGNORE_UAS"},
		{name: "IGNORE_UAS, uas forced", setting: "uas", offer: with(both, func(o *usbms.Offer) { o.Quirks = usbms.QuirkIgnoreUAS }), uas: true},
		{name: "IGNORE_UAS on a UAS-only device: nothing else", setting: "auto", offer: with(uasOnly, func(o *usbms.Offer) { o.Quirks = usbms.QuirkIgnoreUAS }), uas: true},
		{name: "ASMedia at high speed", setting: "auto", offer: asm(usbdev.SpeedHigh, 0), why: "below SuperSpeed"},
		{name: "ASMedia with 32 streams", setting: "auto", offer: asm(usbdev.SpeedSuper, 32), why: "32 streams", quirks: 0},
		{name: "ASMedia at SuperSpeed: both offered", setting: "auto", offer: asm(usbdev.SpeedSuper, 16), why: "no clear gain"},
		{name: "ASMedia at SuperSpeed on UAS: 240 blocks", setting: "uas", offer: asm(usbdev.SpeedSuper, 16), uas: true, quirks: usbms.QuirkMaxSectors240},
		{name: "bad setting", setting: "scsi", offer: both, refused: true},
	}
	for _, c := range cases {
		got, err := usbms.ChooseTransport(c.setting, c.offer)
		if c.refused {
			var se *failure.SettingError
			if !errors.As(err, &se) || se.Setting != usbms.SettingTransport {
				t.Errorf("%s: %+v, %v; want a SettingError of the transport", c.name, got, err)
			}
			continue
		}
		if err != nil || got.UAS != c.uas || (c.why == "") != (got.Why == "") || got.Quirks != c.quirks {
			t.Errorf("%s: %+v, %v; want UAS %v, why %q, quirks %v", c.name, got, err, c.uas, c.why, c.quirks)
		}
		if c.why != "" && !strings.Contains(got.Why, c.why) {
			t.Errorf("%s: why %q, want it to say %q", c.name, got.Why, c.why)
		}
	}
}

// TestUASTextsAreFacts: what UAS adds to messages states facts, no advice.
func TestUASTextsAreFacts(t *testing.T) {
	_, bot := usbms.ChooseTransport("bot", usbms.Offer{UAS: true})
	_, uas := usbms.ChooseTransport("uas", usbms.Offer{BOT: true})
	asm, _ := usbms.ChooseTransport("auto", usbms.Offer{BOT: true, UAS: true, VID: 0x174c, PID: 0x55aa, Speed: usbdev.SpeedHigh})
	factsonly.Check(t, bot.Error(), uas.Error(), asm.Why, usbms.ErrUASResponse.Error(), usbms.ErrUASProtocol.Error(),
		usbdev.ErrNoStreams.Error(), usbdev.ReasonUASOnLibusb, usbms.CheckTransportSetting("scsi").Error(),
		usbms.TransportInfo{Protocol: "UAS", Streams: 16, QueueDepth: 1}.String())
}

// TestOfferOf: an offer carries the reader's flags from both tables, with
// the overrides, so that IGNORE_UAS from uas's table reaches the choice.
func TestOfferOf(t *testing.T) {
	info := usbdev.Info{VID: 0x357d, PID: 0x7788, Speed: usbdev.SpeedSuper, SubClass: usbdev.SubclassSCSI, Protocol: usbdev.ProtocolBOT,
		UAS: usbdev.UASSetting{Alt: 1, Command: 0x01, Status: 0x82, DataIn: 0x83, DataOut: 0x04, MaxStreams: 16}}
	o := usbms.OfferOf(info, usbms.QuirkOverrides{})
	if !o.BOT || !o.UAS || o.MaxStreams != 16 || o.UASQuirks&usbms.QuirkIgnoreUAS == 0 || o.Quirks&usbms.QuirkIgnoreUAS != 0 {
		t.Errorf("%+v: want both offered, IGNORE_UAS from uas's table only", o)
	}
	c, err := usbms.ChooseTransport("auto", o)
	if err != nil || c.UAS || !strings.Contains(c.Why, "IGNORE_UAS") {
		t.Errorf("auto: %+v, %v; want Bulk-Only for IGNORE_UAS", c, err)
	}
	// The user's override clears it, as the kernel's quirks= does.
	if o := usbms.OfferOf(info, usbms.QuirkOverrides{Setting: "357d:7788:"}); o.UASQuirks != 0 {
		t.Errorf("overridden: %v", o.UASQuirks)
	}
}

// TestSettingErrors: a value the settings do not take is refused with a
// sentinel an importer matches with errors.Is, as the CLI matches the
// setting it names.
func TestSettingErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		is      error
		setting bool
	}{
		{"transport", usbms.CheckTransportSetting("scsi"), usbms.ErrUnknownTransport, true},
		{"transport chosen", func() error { _, err := usbms.ChooseTransport("scsi", usbms.Offer{BOT: true}); return err }(), usbms.ErrUnknownTransport, true},
		{"transport not offered", func() error { _, err := usbms.ChooseTransport("uas", usbms.Offer{BOT: true}); return err }(), usbms.ErrTransportNotOffered, true},
		{"quirks setting", usbms.QuirkOverrides{Setting: "0781:0002"}.Check(), usbms.ErrQuirkSyntax, true},
		{"quirks environment", usbms.QuirkOverrides{Env: "zz:0002:c"}.Check(), usbms.ErrQuirkSyntax, false},
		{"quirk flag name", func() error { _, err := usbms.ParseQuirkOverrides("0781:0002:c,NOT_A_FLAG"); return err }(), usbms.ErrQuirkSyntax, false},
	} {
		var se *failure.SettingError
		if !errors.Is(tc.err, tc.is) || failure.Of(tc.err) != failure.Usage || errors.As(tc.err, &se) != tc.setting {
			t.Errorf("%s: %v (class %v); want it to match %v, a usage error, a setting's %v", tc.name, tc.err, failure.Of(tc.err), tc.is, tc.setting)
		}
	}
}
