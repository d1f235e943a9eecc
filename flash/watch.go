package flash

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/blockdev"
	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/usbms"
)

// Watch writes the image to every card that appears in any reader find
// shows, once per insertion, until ctx is done (Ctrl-C): a flashing
// station. Each card gets the checks, progress, verify and outcome of a
// single write, with its own decode; the writes under way when ctx ends
// stop after the command in flight and sync. The buffers of all the
// writes at once stay within blockdev.MaxBufferMemory: a card waits for a
// free set when they would not.
//
// Watch returns nil when every card succeeded (or none came), and a
// *CardsError when some did not.
func Watch(ctx context.Context, cfg Config, find drive.Finder) (*Result, error) {
	s := newSession(cfg)
	if err := cfg.VerifyMethod.CheckWrite(); err != nil {
		return s.res, err
	}
	if err := checkSizes(s.transfer, cfg.Buffers, 0, 1); err != nil {
		return s.res, err
	}
	if err := checkChecksum(cfg); err != nil {
		return s.res, err
	}
	if err := checkCustomize(&cfg); err != nil {
		return s.res, err
	}
	if cfg.Report != "" {
		if err := CheckReport(cfg.Report); err != nil {
			return s.res, err
		}
	}
	// The image must open now, not at the first card; it stays open for
	// its checksum, hashed once for every card.
	dl, dlNotes, dlErr := findDownload(cfg, s.readBeside(ctx))
	src, err := s.openImage(ctx, dl)
	if err != nil {
		return s.res, err
	}
	defer src.Close()
	if _, err := s.planWrite(ctx, src, cfg.BlockMap, true); err != nil {
		return s.res, err
	}
	buffers := buffersFor(s.transfer, cfg.Buffers)
	s.emit(Started{Image: displayImage(cfg.Image), Source: src, TransferSize: s.transfer, Buffers: buffers, Watch: true})
	for _, n := range dlNotes {
		s.emit(Note{Message: n})
	}
	if dlErr != nil {
		return s.res, dlErr
	}
	if err := s.inspectImage(src); err != nil {
		return s.res, err
	}
	s.startDownload(ctx, dl, src)
	s.emit(Note{Message: fmt.Sprintf("Watching for cards to write %s to; Ctrl-C to stop", displayImage(cfg.Image))})

	// Bounded at the size asked: a card that takes less needs less.
	sets := make(chan struct{}, max(blockdev.MaxBufferMemory/pipeline.BufferMemory(s.transfer, buffers), 1))
	var cards []*card
	found := 0 // cards found, for {n}
	opts := drive.WatchOptions{Options: drive.Options{Force: cfg.Force, Image: cfg.Image, Readers: cfg.Readers,
		OnNotice: func(reader string, n usbms.Notice) { s.emit(Note{Card: reader, Message: n.Text, Notice: &n}) }},
		OnNote:    func(msg string) { s.emit(Note{Message: msg}) },
		OnReaders: func(n int) { s.emit(Readers{Present: n}) }}
	err = drive.Watch(ctx, find, opts, func(ctx context.Context, d *drive.Device, err error) {
		s.mu.Lock()
		found++
		c := &card{d: d, n: found}
		s.mu.Unlock()
		if err != nil {
			c.out.Target = "reader"
			var te *drive.Error
			if errors.As(err, &te) && te.Target != "" {
				c.out.Target = te.Target
			}
			c.fail(err)
		} else {
			sets <- struct{}{}
			defer func() { <-sets }()
			s.writeOne(ctx, c)
		}
		s.mu.Lock()
		cards = append(cards, c)
		s.mu.Unlock()
		s.record(c)
	})
	if err != nil {
		return s.res, err
	}
	ok := 0
	var errs []error
	for _, c := range cards {
		if c.failed() {
			errs = append(errs, c.out.Err)
		} else {
			ok++
		}
	}
	if len(errs) == 0 {
		return s.res, nil
	}
	return s.res, &CardsError{Succeeded: ok, Failed: len(errs), Errs: errs}
}

// writeOne writes one card --watch found: its own decode, the checks, the
// write.
func (s *session) writeOne(ctx context.Context, c *card) {
	src, err := s.openImage(ctx, s.download)
	if err != nil {
		c.out.Target = c.d.Name
		c.fail(err)
		return
	}
	defer src.Close()
	s.opened(ctx, c, src)
	if c.failed() {
		return
	}
	s.writeCards(ctx, src, &writePlan{}, []*card{c})
}
