package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/pipeline/fanout"
	"github.com/usbflash/usbflash/usbms"
)

// writeCards writes the image to cards that are open and checked: one
// decode, one card or a fanout group, then each card verified and ejected
// on its own. It records every card's outcome and returns an error only
// when the stream itself failed with several cards (the image, Ctrl-C),
// which every card still being written shares.
func (s *session) writeCards(ctx context.Context, src *image.Source, plan *writePlan, cards []*card) error {
	transfer := cards[0].transfer
	names := make([]string, len(cards))
	started := time.Now()
	for i, c := range cards {
		transfer = min(transfer, c.transfer) // the group uses what every reader takes
		names[i] = c.d.Name
		c.out.Started = started
		c.d.Keep() // from here on the card is ours to keep, written or not
	}
	s.emit(WriteStarted{Cards: names, TransferSize: transfer})

	var dev blockdev.Device
	var group *fanout.Group
	if len(cards) == 1 {
		dev = cards[0].d.Dev
	} else {
		targets := make([]fanout.Target, len(cards))
		for i, c := range cards {
			targets[i] = fanout.Target{Name: c.d.Name, Dev: c.d.Dev}
		}
		g, err := fanout.New(targets, fanout.Options{Lag: s.cfg.Engine.Lag, TransferSize: transfer})
		if err != nil {
			for _, c := range cards {
				c.fail(err)
			}
			return nil
		}
		group, dev = g, g
	}
	prog := s.watchWrite(src, cards, group)
	// Buffers as given: with none the engine chooses for the transfer size
	// the device takes, once its limits are known (WriteResult.Buffers).
	opts := pipeline.WriteOptions{TransferSize: transfer, Buffers: s.cfg.Engine.Buffers, ExpectedSize: expectedSize(src),
		Progress: prog.stream, Sync: true, HashAlg: pipeline.HashNone,
		// The last moment to keep the card from booting an image that
		// is not the one meant: the file changed, or it is not the
		// download its publisher's checksum describes.
		BeforeFirst: func() error {
			if err := src.CheckUnchanged(); err != nil {
				return err
			}
			matched, err := s.img.Check(ctx, src)
			if matched != "" {
				s.emit(Note{Card: names[0], Message: matched})
				from, signedBy := s.img.SumFrom()
				s.emit(Checksum{Card: names[0], State: ChecksumMatched, From: from, SignedBy: signedBy})
			}
			return err
		}}
	if len(cards) == 1 {
		opts.Name = cards[0].d.Name
	}
	opts.WriteFirst = s.firstWriter(cards, group)
	if s.cfg.Engine.Verify {
		opts = s.cfg.Engine.VerifyMethod.Record(opts)
	}
	res, werr := pipeline.Write(ctx, dev, plan.source(src), plan.options(opts))
	prog.stop()
	s.queueNotes(cards, res)
	if werr == nil {
		s.downloadNote(src, res)
	}
	if group != nil {
		group.Close()
	}
	finished := time.Now()
	for i, c := range cards {
		c.out.Write = res
		c.out.Written = res.Bytes
		if group != nil {
			r := group.Results()[i]
			c.out.Written = min(r.Written, res.Bytes)
			c.fail(r.Err) // the device's errors name it
		}
		c.out.Finished = finished
	}
	if werr != nil && !errors.Is(werr, fanout.ErrAllFailed) {
		// One card: its error. Several: the stream failed (the image,
		// Ctrl-C), and every card still being written shares that fate.
		for _, c := range cards {
			c.fail(werr)
		}
		if len(cards) > 1 {
			return werr
		}
		return nil
	}
	if group != nil {
		s.markSlowest(cards, group.Results())
	}
	for _, c := range cards {
		if !c.failed() {
			c.out.Skipped, c.out.SkippedWhy = plan.skipped(res)
		}
	}
	if s.cfg.Engine.Verify {
		s.verifyCards(ctx, cards, res, transfer)
	}
	if s.cfg.Targets.Eject {
		for _, c := range cards {
			if c.failed() {
				continue
			}
			ejected := false
			if err := c.d.Eject(ctx); err != nil {
				c.out.EjectErr = err
			} else {
				ejected = true
			}
			c.out.Ejected = &ejected
		}
	}
	return nil
}

// markSlowest marks the card that was busy longest: of several, its speed
// set everyone's.
func (s *session) markSlowest(cards []*card, results []fanout.Result) {
	var slowest *card
	var most time.Duration
	for i, r := range results {
		if r.Err == nil && r.Busy > most {
			most, slowest = r.Busy, cards[i]
		}
	}
	if slowest != nil {
		slowest.out.Slowest = true
	}
}

// verifyCards reads every written card back at once, each by the
// session's verify method; a mismatch is located by decoding the image
// again (up to the bad range, with digests).
func (s *session) verifyCards(ctx context.Context, cards []*card, res pipeline.WriteResult, transfer int) {
	prog := s.watchVerify(cards, res.Bytes)
	defer prog.stop()
	readSize := transferSize(s.cfg.Engine.TransferSize).readBack(transfer, len(cards))
	// Standard input and a URL were read once: a mismatch stays as the verify found
	// it (a digest mismatch still names its range).
	var reopen func() (io.ReadCloser, error)
	if s.cfg.Customize == nil && s.cfg.Blocks == nil {
		// (A customised card differs from the image where it was
		// customised: a mismatch stays as its digest found it.)
		reopen = s.img.Reopener()
	}
	var wg sync.WaitGroup
	for i, c := range cards {
		if c.failed() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			reopen := reopen
			if s.cfg.Blocks != nil {
				// The card's blocks, made again.
				reopen = func() (io.ReadCloser, error) { return s.cfg.Blocks.For(ctx, c.d) }
			}
			size := fitTransfer(c.d, readSize).Size // the write said what the card takes
			written := res
			if c.digests != nil {
				written.Digests = *c.digests // the card as customised
				written.Digests.Size = res.Digests.Size
			}
			opts := pipeline.VerifyOptions{Name: c.d.Name, TransferSize: size, Progress: func(p pipeline.Progress) { prog.card(i, p) }}
			v, err := pipeline.VerifyWritten(ctx, c.d.Dev, s.cfg.Engine.VerifyMethod, written, opts, reopen)
			// A customised card differs from the image on purpose: a
			// comparison with the image cannot tell what to repair.
			if err != nil && s.cfg.Engine.Repair && reopen != nil && c.digests == nil && failure.Of(err) == failure.Verify {
				var rr *pipeline.RepairResult
				rr, err = s.repair(ctx, c.d, reopen, res.Bytes, pipeline.RepairOptions{Verify: pipeline.VerifyOptions{Name: c.d.Name, TransferSize: size, Only: res.Written}, TransferSize: transfer}, err)
				if err == nil {
					// The ranges match now: the whole card is read back
					// once more, as a write without a repair is.
					c.out.Repair = rr
					v, err = pipeline.VerifyWritten(ctx, c.d.Dev, s.cfg.Engine.VerifyMethod, written, opts, reopen)
				}
			}
			switch {
			case errors.Is(err, context.Canceled):
				// Written in full and synced: only the check was cut short.
				err = &VerifyInterruptedError{Image: image.Shown(s.cfg.Image.Path), Target: cmp.Or(c.spec, c.d.Name), Written: res.Bytes, Err: err}
			case failure.Of(err) == failure.Verify:
				// It holds bytes known to be wrong: it must not boot them.
				err = s.unboot(ctx, c.d, transfer, err)
			}
			if err != nil {
				c.fail(err)
				prog.failed(i)
				return
			}
			c.out.Verify = &v
			c.out.Finished = time.Now()
		}()
	}
	wg.Wait()
}

// repair writes again the ranges of a card whose read-back differed
// (verr), and says so; a card with nothing to repair (the reader returned
// different data for the same blocks) keeps verr.
func (s *session) repair(ctx context.Context, d *drive.Device, open func() (io.ReadCloser, error), size int64, opts pipeline.RepairOptions, verr error) (*pipeline.RepairResult, error) {
	rr, err := pipeline.Repair(ctx, d.Dev, open, size, opts)
	switch {
	case errors.Is(err, pipeline.ErrNothingToRepair):
		return nil, verr
	case err != nil:
		return nil, err
	}
	s.emit(Note{Card: d.Name, Message: fmt.Sprintf("%s: %s (%s) read back different; written again, %s, they match",
		d.Name, count(rr.Ranges, "range"), units.FormatBytes(rr.Bytes), count(rr.Rounds, "time"))})
	return &rr, nil
}

// count is n things, "1 range", "2 ranges".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// VerifyInterruptedError is a write whose verify was interrupted: the
// image was written in full and synced, and only the check of it was cut
// short.
type VerifyInterruptedError struct {
	Image, Target string // as given: what a verify of the card compares
	Written       int64  // image bytes written
	Err           error  // the verify's cancel
}

func (e *VerifyInterruptedError) Error() string {
	return fmt.Sprintf("%s was written in full (%s) and synced; its verify was interrupted: %v", e.Target, units.FormatBytes(e.Written), e.Err)
}
func (e *VerifyInterruptedError) Unwrap() error { return e.Err }

// Class is Interrupted.
func (e *VerifyInterruptedError) Class() failure.Class { return failure.Interrupted }

// queueNotes says when a card's write kept fewer transfers in flight than
// its reader's queue depth: the buffers left fewer (one is always being
// filled), or several cards were written from one decode, each one
// transfer at a time. Said as a notice of the setting, which the command
// line names by its flag.
func (s *session) queueNotes(cards []*card, res pipeline.WriteResult) {
	setting := &observe.Notice{Kind: observe.NoticeSetting, Setting: usbms.SettingQueueDepth}
	if len(cards) > 1 {
		for _, c := range cards {
			if d := transportOf(c.d).QueueDepth; d > 1 {
				s.emit(Note{Card: c.d.Name, Notice: setting, Message: fmt.Sprintf(
					"%s %d is not used by the write of several cards: one decode feeds each card one transfer at a time (the read-back uses it)", usbms.SettingQueueDepth, d)})
			}
		}
		return
	}
	if res.QueueDepth < res.DeviceQueueDepth {
		s.emit(Note{Card: cards[0].d.Name, Notice: setting, Message: fmt.Sprintf(
			"%s %d: the write kept %d full transfers in flight, as many as its %d buffers leave (one is always being filled)",
			usbms.SettingQueueDepth, res.DeviceQueueDepth, res.QueueDepth, res.Buffers)})
	}
}
