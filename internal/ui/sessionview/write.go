package sessionview

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/pipeline"
)

// Write is a presenter of a write session: an Observer of its events and
// what it says when the session returns.
type Write interface {
	session.Observer
	Finish(res *session.Result, err error) error
}

// NewWrite is the presenter of a write session of command (write, or
// erase and format, which write their own blocks): one card's (the
// single-card contract) unless several tells it to show a session of
// several cards (several targets, --all, --report, --watch).
func NewWrite(rep termui.Reporter, w Words, command jsonevents.Command, several, watch, verify bool) Write {
	if several || watch {
		return &many{rep: rep, w: w, command: command, watch: watch, verify: verify, bars: map[string]*termui.CardBars{}}
	}
	return &one{rep: rep, w: w, command: command}
}

// doing is the verb a start line of a session that writes its own blocks
// (erase's, format's) begins with.
func doing(command jsonevents.Command) string {
	if command == jsonevents.CommandFormat {
		return "Formatting"
	}
	return "Erasing"
}

// one shows a session of one card, written without a report: the
// single-card contract of docs/events.md (start, device, phase, progress,
// note, summary events; the summary lines).
type one struct {
	rep     termui.Reporter
	w       Words
	command jsonevents.Command
	outcome *session.Outcome
}

func (p *one) Observe(e session.Event) {
	switch e := e.(type) {
	case session.Started:
		src := e.Source
		if src == nil { // erase's and format's blocks: each card's own
			p.rep.Event(&jsonevents.Start{Command: p.command, Image: e.Image, Format: image.FormatRaw.String(), Size: -1, CompressedSize: -1,
				Target: e.Targets[0], TransferSize: int64(e.TransferSize), Buffers: e.Buffers},
				fmt.Sprintf("%s %s: writing %s ...", doing(p.command), e.Targets[0], e.Image))
			return
		}
		p.rep.Event(&jsonevents.Start{
			Command: p.command,
			Image:   e.Image, Format: src.Format.String(), Size: src.Size, SizeExact: src.SizeExact,
			CompressedSize: src.CompressedSize, Target: e.Targets[0], TransferSize: int64(e.TransferSize), Buffers: e.Buffers,
		}, fmt.Sprintf("Writing %s (%s, %s) to %s ...", e.Image, src.Format, termui.ImageSize(src), e.Targets[0]))
		noChecksumNote(p.rep, p.w, src)
	case session.CardDone:
		p.outcome = e.Outcome
	default:
		Card(p.rep, p.w, e)
	}
}

// Finish prints the summary of a card that was written, or hands the
// error on.
func (p *one) Finish(_ *session.Result, err error) error {
	if err != nil || p.outcome == nil {
		return err
	}
	o := p.outcome
	res := o.Write
	sum := &jsonevents.Summary{
		Command: p.command,
		Bytes:   res.Bytes, BytesWritten: res.BytesWritten, Transfers: int64(res.Transfers),
		ElapsedS: res.Elapsed.Seconds(), Rate: termui.Rate(res.Bytes, res.Elapsed),
		Bound: jsonevents.BoundOf(res.Bound), BoundRatio: res.BoundRatio,
		DecoderWaitS: ptr(res.DecoderWait.Seconds()), DeviceWaitS: ptr(res.DeviceWait.Seconds()),
		Memory: res.Memory, CPUS: res.CPU.Seconds(), CPUPerGiB: termui.PerGiB(res.CPU, res.Bytes),
		Cost: jsonevents.CostOf(res.Usage, res.IO),
	}
	wrote := units.FormatBytes(res.Bytes)
	if o.SkippedWhy != "" {
		// A block map or a sparse write: say what went to the card.
		wrote = fmt.Sprintf("%s of the %s image", units.FormatBytes(res.Bytes-o.Skipped), units.FormatBytes(res.Bytes))
	}
	text := []string{
		fmt.Sprintf("Wrote %s in %s (%s), %s", wrote, res.Elapsed.Round(time.Millisecond),
			units.FormatRate(sum.Rate), termui.Plural(res.Transfers, "command")),
		termui.WriteBoundLine(res),
		termui.CPULine(res.CPU, res.Bytes, res.Memory),
	}
	if o.SkippedWhy != "" {
		sum.SkippedBytes = ptr(o.Skipped)
		text = append(text, fmt.Sprintf("Skipped %s (%s): those regions keep the card's old bytes", units.FormatBytes(o.Skipped), o.SkippedWhy))
	}
	if v := o.Verify; v != nil {
		sum.Verified = true
		sum.VerifyElapsedS = ptr(v.Elapsed.Seconds())
		sum.VerifyTransferSize = int64(v.TransferSize)
		sum.VerifyCost = jsonevents.CostOf(v.Usage, v.IO)
		sum.Verify = v.Method.Report()
		text = append(text, fmt.Sprintf("Verified %s read back in %s (%s), %s", units.FormatBytes(v.Bytes),
			v.Elapsed.Round(time.Millisecond), units.FormatRate(termui.Rate(v.Bytes, v.Elapsed)), v.Method.Describe()))
	}
	if res.SHA256 != ([32]byte{}) {
		sum.SHA256 = hex.EncodeToString(res.SHA256[:])
	}
	if o.Ejected != nil {
		sum.Ejected = o.Ejected
		var none *drive.NotEjectableError
		switch {
		case errors.As(o.EjectErr, &none):
			note := p.w.Flag(session.SettingEject) + " does nothing for " + none.What
			p.rep.Event(jsonevents.NewNote(note), "")
			text = append(text, "Not ejected: "+note)
		case o.EjectErr != nil:
			text = append(text, fmt.Sprintf("Eject failed (the image is written and synced): %v", o.EjectErr))
		default:
			text = append(text, "Ejected")
		}
	}
	if sum.SHA256 != "" {
		text = append(text, "SHA-256 "+sum.SHA256)
	}
	p.rep.Event(sum, strings.Join(text, "\n"))
	return nil
}

// blockMap says which block map a write uses.
func blockMap(rep termui.Reporter, e session.BlockMapChosen) {
	pct := 100.0
	if e.ImageSize > 0 {
		pct = float64(e.MappedBytes) * 100 / float64(e.ImageSize)
	}
	msg := fmt.Sprintf("Block map %s: %d ranges, %s of %s mapped (%.0f%%); only those are written and verified",
		e.Path, e.Ranges, units.FormatBytes(e.MappedBytes), units.FormatBytes(e.ImageSize), pct)
	rep.Event(&jsonevents.BlockMap{BMap: e.Path, Ranges: e.Ranges, MappedBytes: e.MappedBytes, ImageSize: e.ImageSize}, msg)
}

// progressOf is the progress event of a session's progress.
func progressOf(p session.Progress) jsonevents.Progress {
	e := jsonevents.NewProgress(jsonevents.Phase(p.Phase), p.Done, p.Total, p.Elapsed)
	if p.CompressedDone >= 0 {
		e.CompressedDone = ptr(p.CompressedDone)
		if p.CompressedTotal >= 0 {
			e.CompressedTotal = ptr(p.CompressedTotal)
		}
	}
	if d := p.Download; d != nil {
		e.Download = termui.DownloadEvent(d)
	}
	return e
}

// many shows a session of several cards (or one with a report, or a
// station's): a start naming every target, a bar per card, a card event
// per card, the table and the session summary.
type many struct {
	rep           termui.Reporter
	w             Words
	command       jsonevents.Command
	watch, verify bool
	// bars of each write under way, by its first card: a station writes
	// cards as they come, side by side.
	bars  map[string]*termui.CardBars
	phase pipeline.Phase
}

func (p *many) Observe(e session.Event) {
	switch e := e.(type) {
	case session.Started:
		src := e.Source
		if src == nil { // erase's and format's blocks: each card's own
			text := fmt.Sprintf("%s %s: writing %s to each: %s", doing(p.command), termui.Plural(len(e.Targets), "card"), e.Image, strings.Join(e.Targets, ", "))
			if e.Watch {
				text = ""
			}
			p.rep.Event(&jsonevents.ManyStart{Command: p.command, Image: e.Image, Format: image.FormatRaw.String(), Size: -1,
				Targets: append([]string{}, e.Targets...), TransferSize: int64(e.TransferSize), Buffers: e.Buffers, Lag: e.Lag}, text)
			return
		}
		text := fmt.Sprintf("Writing %s (%s, %s) to %s: %s", e.Image, src.Format, termui.ImageSize(src),
			termui.Plural(len(e.Targets), "card"), strings.Join(e.Targets, ", "))
		if e.Watch {
			text = ""
		}
		p.rep.Event(&jsonevents.ManyStart{
			Command: p.command,
			Image:   e.Image, Format: src.Format.String(), Size: src.Size, SizeExact: src.SizeExact,
			Targets: append([]string{}, e.Targets...), TransferSize: int64(e.TransferSize), Buffers: e.Buffers, Lag: e.Lag,
		}, text)
		noChecksumNote(p.rep, p.w, src)
	case session.Opened:
		p.rep.Event(deviceEvent(e), "")
	case session.Note:
		msg := e.Message
		if e.Card != "" && !strings.Contains(msg, e.Card) {
			msg = e.Card + ": " + msg
		}
		p.rep.Event(p.w.Note(msg, e.Notice))
	case session.WriteStarted:
		p.bars[e.Cards[0]].Done()
		p.bars[e.Cards[0]] = termui.NewCardBars(p.rep, e.Cards)
		if !p.watch {
			msg := fmt.Sprintf("Writing %s with %s transfers", termui.Plural(len(e.Cards), "card"), units.FormatSize(int64(e.TransferSize)))
			p.rep.Event(jsonevents.NewNote(msg), "")
		}
	case session.Progress:
		if len(e.Cards) == 0 || p.bars[e.Cards[0].Card] == nil {
			return
		}
		if e.Phase != p.phase && !p.watch {
			p.phase = e.Phase
			p.rep.Event(&jsonevents.PhaseEvent{Phase: jsonevents.Phase(e.Phase)}, "")
		}
		p.bars[e.Cards[0].Card].Update(e)
	case session.Checksum:
		Card(p.rep, p.w, e)
	case session.Slot:
		p.rep.Event(&jsonevents.Slot{Target: e.Card, Card: e.Present}, "")
	case session.CardDone:
		if b := p.bars[e.Outcome.Target]; b != nil && p.watch {
			b.Done()
			delete(p.bars, e.Outcome.Target)
		}
		p.rep.Event(jsonevents.NewCard(session.RecordOf(e.Outcome, p.w.Codes), p.w.hint(e.Outcome.Err)), "")
	}
}

// Finish prints the table and the session summary, then hands the
// session's error on.
func (p *many) Finish(res *session.Result, err error) error {
	for _, b := range p.bars {
		b.Done()
	}
	if res == nil || (len(res.Cards) == 0 && err != nil && !p.watch) {
		return err
	}
	records := make([]session.Record, len(res.Cards))
	for i, o := range res.Cards {
		records[i] = session.RecordOf(o, p.w.Codes)
	}
	t := res.Tally
	p.rep.Event(&jsonevents.ManySummary{
		Command: p.command,
		Cards:   t.Cards, Succeeded: t.Succeeded, Failed: t.Cards - t.Succeeded, SHA256: t.SHA256, Verify: t.Verify,
		ElapsedS: time.Since(res.Started).Seconds(),
	}, termui.CardTable(records, !p.verify))
	if t.Cards > len(records) {
		msg := fmt.Sprintf("The table shows the last %d of %d cards; the report holds every card", len(records), t.Cards)
		p.rep.Event(jsonevents.NewNote(msg), msg)
	}
	for _, o := range res.Cards {
		if o.EjectErr != nil {
			msg := fmt.Sprintf("%s: eject failed (the image is written and synced): %v", o.Target, o.EjectErr)
			p.rep.Event(jsonevents.NewNote(msg), msg)
		}
	}
	return err
}

// deviceEvent is the device event of an opened card.
func deviceEvent(e session.Opened) *jsonevents.Device {
	return &jsonevents.Device{Target: e.Card, Capacity: e.Capacity,
		BlockSize: e.BlockSize, TransferSize: int64(e.TransferSize), Transport: e.Transport.Protocol, UASStreams: e.Transport.Streams,
		QueueDepth: e.Transport.QueueDepth, TransportWhy: e.Transport.Why}
}
