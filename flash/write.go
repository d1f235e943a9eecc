package flash

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/usbflash/usbflash/blockdev"
	"github.com/usbflash/usbflash/fanout"
	"github.com/usbflash/usbflash/imagesrc"
	"github.com/usbflash/usbflash/pipeline"
)

// writeCards writes the image to cards that are open and checked: one
// decode, one card or a fanout group, then each card verified and ejected
// on its own. It records every card's outcome and returns an error only
// when the stream itself failed with several cards (the image, Ctrl-C),
// which every card still being written shares.
func (s *session) writeCards(ctx context.Context, src *imagesrc.Source, plan *writePlan, cards []*card) error {
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
		g, err := fanout.New(targets, fanout.Options{Lag: s.cfg.Lag, TransferSize: transfer})
		if err != nil {
			for _, c := range cards {
				c.fail(err)
			}
			return nil
		}
		group, dev = g, g
	}
	// The image's SHA-256 only when asked for: a slow CPU (an embedded
	// host, an emulator) hashes at a few tens of MB/s. The digests cost a
	// tenth of that and are all a verify needs.
	hash, digests := pipeline.HashNone, false
	switch {
	case s.cfg.Verify && s.cfg.VerifyHash == VerifySHA256:
		hash = pipeline.HashSHA256
	case s.cfg.Verify:
		digests = true
	}
	prog := s.watchWrite(src, cards, group)
	opts := pipeline.WriteOptions{TransferSize: transfer, Buffers: s.cfg.Buffers, ExpectedSize: expectedSize(src),
		Progress: prog.stream, Sync: true, HashAlg: hash, Digests: digests,
		// The last moment to keep the card from booting an image that
		// is not the one meant: the file changed, or it is not the
		// download its publisher's checksum describes.
		BeforeFirst: func() error {
			if err := src.CheckUnchanged(); err != nil {
				return err
			}
			if err := s.download.check(ctx); err != nil || s.download == nil {
				return err
			}
			s.emit(Note{Card: names[0], Message: "The image file matches the SHA-256 in " + s.download.from})
			return nil
		}}
	if len(cards) == 1 {
		opts.Name = cards[0].d.Name
	}
	res, werr := pipeline.Write(ctx, dev, plan.source(src), plan.options(opts))
	prog.stop()
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
	if s.cfg.Verify {
		s.verifyCards(ctx, plan, cards, res, transfer)
	}
	if s.cfg.Eject {
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

// verifyCards reads every written card back at once, each against the
// write's digests (or the image's SHA-256); a mismatch is located by
// decoding the image again (up to the bad range, with digests).
func (s *session) verifyCards(ctx context.Context, plan *writePlan, cards []*card, res pipeline.WriteResult, transfer int) {
	prog := s.watchVerify(cards, res.Bytes)
	defer prog.stop()
	readSize := s.cfg.VerifyTransferSize
	if readSize == 0 {
		readSize = pipeline.ReadBackSize(transfer, len(cards))
	}
	var wg sync.WaitGroup
	for i, c := range cards {
		if c.failed() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			size, _ := c.d.FitTransfer(readSize) // the write said what the card takes
			want, vopts := plan.verify(res, pipeline.VerifyOptions{Name: c.d.Name, TransferSize: size,
				Progress: func(p pipeline.Progress) { prog.card(i, p) }})
			var v pipeline.VerifyResult
			var err error
			if s.cfg.VerifyHash == VerifySHA256 {
				v, err = pipeline.VerifyHash(ctx, c.d.Dev, res.Bytes, want, vopts)
			} else {
				v, err = pipeline.VerifyDigests(ctx, c.d.Dev, res.Digests, vopts)
			}
			if err != nil {
				c.fail(s.locateMismatch(ctx, c, res.Bytes, vopts, err))
				prog.failed(i)
				return
			}
			c.out.Verify = &v
			c.out.Finished = time.Now()
		}()
	}
	wg.Wait()
}

// locateMismatch turns a hash or digest mismatch into the first differing
// LBA by comparing the card with a fresh decode of the image (not possible
// for standard input, read once: a digest mismatch still names its range).
func (s *session) locateMismatch(ctx context.Context, c *card, size int64, opts pipeline.VerifyOptions, hashErr error) error {
	if s.cfg.Image == "-" {
		return hashErr
	}
	open := func() (io.ReadCloser, error) { return imagesrc.Open(s.cfg.Image) }
	return pipeline.LocateMismatch(ctx, c.d.Dev, open, size, opts, hashErr)
}
