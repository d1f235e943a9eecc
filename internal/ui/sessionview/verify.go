package sessionview

import (
	"fmt"
	"time"

	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/termui"
)

// Verify is the presenter of a verify session's events, as the
// single-card contract has them.
func Verify(rep termui.Reporter, w Words) session.Observer {
	return session.ObserverFunc(func(e session.Event) {
		if e, ok := e.(session.Started); ok {
			src := e.Source
			rep.Event(&jsonevents.Start{
				Command: jsonevents.CommandVerify,
				Image:   e.Image, Format: src.Format.String(), Size: src.Size, SizeExact: src.SizeExact,
				CompressedSize: src.CompressedSize, Target: e.Targets[0], TransferSize: int64(e.TransferSize),
			}, fmt.Sprintf("Comparing %s (%s, %s) with %s ...", e.Image, src.Format, termui.ImageSize(src), e.Targets[0]))
			return
		}
		Card(rep, w, e)
	})
}

// Verified is the summary of a card that matches its image.
func Verified(rep termui.Reporter, res *session.VerifyResult) {
	rep.Event(&jsonevents.Summary{
		Command: jsonevents.CommandVerify,
		Bytes:   res.Bytes, ElapsedS: res.Elapsed.Seconds(), Rate: termui.Rate(res.Bytes, res.Elapsed), Verified: true,
		Memory: res.Memory, CPUS: res.CPU.Seconds(), CPUPerGiB: termui.PerGiB(res.CPU, res.Bytes),
		Cost: jsonevents.CostOf(res.Usage, res.IO),
	}, fmt.Sprintf("%s matches %s: %s compared in %s (%s)\n%s", res.Card, shown.Text(res.Image), units.FormatBytes(res.Bytes),
		res.Elapsed.Round(time.Millisecond), units.FormatRate(termui.Rate(res.Bytes, res.Elapsed)),
		termui.CPULine(res.CPU, res.Bytes, res.Memory)))
}
