package main

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
	"github.com/usbflash/usbflash/usbms"
)

// cardPresenter shows a session of one card, written without --report:
// the single-card contract of docs/events.md (start, device, phase, progress,
// note, summary events; the summary lines).
type cardPresenter struct {
	rep     termui.Reporter
	outcome *session.Outcome
}

func newCardPresenter(rep termui.Reporter) *cardPresenter {
	return &cardPresenter{rep: rep}
}

func (p *cardPresenter) Observe(e session.Event) {
	switch e := e.(type) {
	case session.Started:
		src := e.Source
		p.rep.Event(&jsonevents.Start{
			Command: jsonevents.CommandWrite,
			Image:   e.Image, Format: src.Format.String(), Size: src.Size, SizeExact: src.SizeExact,
			CompressedSize: src.CompressedSize, Target: e.Targets[0], TransferSize: int64(e.TransferSize), Buffers: e.Buffers,
		}, fmt.Sprintf("Writing %s (%s, %s) to %s ...", e.Image, src.Format, termui.ImageSize(src), e.Targets[0]))
		noChecksumNote(p.rep, src)
	case session.CardDone:
		p.outcome = e.Outcome
	default:
		presentCard(p.rep, e)
	}
}

// finish prints the summary of a card that was written, or hands the
// error on.
func (p *cardPresenter) finish(_ *session.Result, err error) error {
	if err != nil || p.outcome == nil {
		return err
	}
	o := p.outcome
	res := o.Write
	sum := &jsonevents.Summary{
		Command: jsonevents.CommandWrite,
		Bytes:   res.Bytes, BytesWritten: res.BytesWritten, Transfers: int64(res.Transfers),
		ElapsedS: res.Elapsed.Seconds(), Rate: termui.Rate(res.Bytes, res.Elapsed),
		Bound: jsonevents.BoundOf(res.Bound), BoundRatio: res.BoundRatio,
		DecoderWaitS: ptr(res.DecoderWait.Seconds()), DeviceWaitS: ptr(res.DeviceWait.Seconds()),
		Memory: res.Memory, CPUS: res.CPU.Seconds(), CPUPerGiB: termui.PerGiB(res.CPU, res.Bytes),
	}
	wrote := units.FormatBytes(res.Bytes)
	if o.SkippedWhy != "" {
		// A block map or --sparse: say what went to the card.
		wrote = fmt.Sprintf("%s of the %s image", units.FormatBytes(res.Bytes-o.Skipped), units.FormatBytes(res.Bytes))
	}
	text := []string{
		fmt.Sprintf("Wrote %s in %s (%s), %s", wrote, res.Elapsed.Round(time.Millisecond),
			units.FormatRate(sum.Rate), plural(res.Transfers, "command")),
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
		sum.Verify = v.Method.Report()
		text = append(text, fmt.Sprintf("Verified %s read back in %s (%s), %s", units.FormatBytes(v.Bytes),
			v.Elapsed.Round(time.Millisecond), units.FormatRate(termui.Rate(v.Bytes, v.Elapsed)), v.Method.Describe()))
	}
	if res.SHA256 != ([32]byte{}) {
		sum.SHA256 = hex.EncodeToString(res.SHA256[:])
	}
	if o.Ejected != nil {
		sum.Ejected = o.Ejected
		switch {
		case errors.Is(o.EjectErr, drive.ErrNotEjectable):
			note := "--eject does nothing for a file: target"
			if strings.HasPrefix(o.Target, "disk:") {
				note = "--eject does nothing for a disk: target on Linux"
			}
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

// presentBlockMap says which block map a write uses.
func presentBlockMap(rep termui.Reporter, e session.BlockMapChosen) {
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

// sessionPresenter shows a session of several cards (or one with
// --report, or --watch): a start naming every target, a bar per card, a
// card event per card, the table and the session summary.
type sessionPresenter struct {
	rep   termui.Reporter
	o     *writeOptions
	watch bool
	// bars of each write under way, by its first card: --watch writes
	// cards as they come, side by side.
	bars  map[string]*termui.CardBars
	phase pipeline.Phase
}

func newSessionPresenter(rep termui.Reporter, o *writeOptions) *sessionPresenter {
	return &sessionPresenter{rep: rep, o: o, watch: o.Watch, bars: map[string]*termui.CardBars{}}
}

func (p *sessionPresenter) Observe(e session.Event) {
	switch e := e.(type) {
	case session.Started:
		src := e.Source
		text := fmt.Sprintf("Writing %s (%s, %s) to %s: %s", e.Image, src.Format, termui.ImageSize(src),
			plural(len(e.Targets), "card"), strings.Join(e.Targets, ", "))
		if e.Watch {
			text = ""
		}
		p.rep.Event(&jsonevents.ManyStart{
			Command: jsonevents.CommandWrite,
			Image:   e.Image, Format: src.Format.String(), Size: src.Size, SizeExact: src.SizeExact,
			Targets: append([]string{}, e.Targets...), TransferSize: int64(e.TransferSize), Buffers: e.Buffers, Lag: e.Lag,
		}, text)
		noChecksumNote(p.rep, src)
	case session.Opened:
		p.rep.Event(newDeviceEvent(e), "")
	case session.Note:
		msg := e.Message
		if e.Card != "" && !strings.Contains(msg, e.Card) {
			msg = e.Card + ": " + msg
		}
		p.rep.Event(noteWithAdvice(msg, e.Notice))
	case session.WriteStarted:
		p.bars[e.Cards[0]].Done()
		p.bars[e.Cards[0]] = termui.NewCardBars(p.rep, e.Cards)
		if !p.watch {
			msg := fmt.Sprintf("Writing %s with %s transfers", plural(len(e.Cards), "card"), units.FormatSize(int64(e.TransferSize)))
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
		presentCard(p.rep, e)
	case session.Slot:
		p.rep.Event(&jsonevents.Slot{Target: e.Card, Card: e.Present}, "")
	case session.CardDone:
		if b := p.bars[e.Outcome.Target]; b != nil && p.watch {
			b.Done()
			delete(p.bars, e.Outcome.Target)
		}
		p.rep.Event(jsonevents.NewCard(recordOf(e.Outcome), cardHint(e.Outcome)), "")
	}
}

// cardHint is the advice for what became of a card, "" for none.
func cardHint(o *session.Outcome) string {
	if o.Err == nil {
		return ""
	}
	return hint(o.Err)
}

// recordOf is the card event's body: the report's row.
func recordOf(o *session.Outcome) session.Record { return session.RecordOf(o, classCodes()) }

// finish prints the table and the session summary, then hands the
// session's error on.
func (p *sessionPresenter) finish(res *session.Result, err error) error {
	for _, b := range p.bars {
		b.Done()
	}
	if res == nil || (len(res.Cards) == 0 && err != nil && !p.watch) {
		return err
	}
	records := make([]session.Record, len(res.Cards))
	for i, o := range res.Cards {
		records[i] = recordOf(o)
	}
	t := res.Tally
	p.rep.Event(&jsonevents.ManySummary{
		Command: jsonevents.CommandWrite,
		Cards:   t.Cards, Succeeded: t.Succeeded, Failed: t.Cards - t.Succeeded, SHA256: t.SHA256, Verify: t.Verify,
		ElapsedS: time.Since(res.Started).Seconds(),
	}, termui.CardTable(records, !p.o.Config.Verify))
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

// noticeNotes passes a reader's notices (recovery steps, commands made
// smaller) to the user, each with its advice.
func noticeNotes(rep termui.Reporter) func(reader string, n usbms.Notice) {
	return func(_ string, n usbms.Notice) { rep.Event(noteWithAdvice(n.Text, &n)) }
}

// noteWithAdvice is a note event and its text, with the advice the
// notice has (noticeAdvice) on the next line.
func noteWithAdvice(msg string, n *usbms.Notice) (jsonevents.Event, string) {
	if n != nil && n.Kind == usbms.NoticeSetting && flagOf(n.Setting) != "" {
		// The setting in the words of the command line: its flag.
		msg = strings.Replace(msg, string(n.Setting)+" ", flagOf(n.Setting)+" ", 1)
	}
	ev := jsonevents.NewNote(msg)
	ev.Hint = noticeAdvice(n)
	if ev.Hint == "" {
		return ev, msg
	}
	return ev, msg + "\n" + termui.Sentence(ev.Hint)
}

// noChecksumNote says when a compressed image carries no checksum of its
// own (zstd without content checksums, xz with check "none"): damage in
// it is found only where the decoder trips, if at all, so the download's
// checksum and the verify are all there is.
func noChecksumNote(rep termui.Reporter, src *image.Source) {
	if src.Format == image.FormatRaw || src.HasChecksum {
		return
	}
	msg := fmt.Sprintf("This %s image carries no checksum of its own: only the read-back and the publisher's SHA-256 (--sha256) can tell it is intact", src.Format)
	rep.Event(jsonevents.NewNote(msg), msg)
}

func ptr[T any](v T) *T { return &v }

// newDeviceEvent is the device event of an opened card.
func newDeviceEvent(e session.Opened) *jsonevents.Device {
	return &jsonevents.Device{Target: e.Card, Capacity: e.Capacity,
		BlockSize: e.BlockSize, TransferSize: int64(e.TransferSize), Transport: e.Transport.Protocol, UASStreams: e.Transport.Streams,
		QueueDepth: e.Transport.QueueDepth, TransportWhy: e.Transport.Why}
}
