package session

import (
	"context"
	"errors"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
)

// RecentCards is how many finished cards a session of Cards (a station's)
// keeps in its Result (Result.Cards); Result.Tally counts them all. A
// station that runs for a week must not keep every card it wrote: its
// report file holds them.
const RecentCards = 16

// Cards is a write session that takes its cards one at a time, as they
// come (a station's: internal/station): the image opened, trusted and
// announced once, then each card written from its own decode with every
// check, the progress, verify and outcome of a single write, and recorded
// as it finishes. With Config.Blocks each card gets its own blocks, made
// for it (its size) once it is open, and checked as an image is. Its
// Result keeps the last RecentCards cards and counts every one
// (Result.Tally), and its Report keeps no records: a station that runs for
// a week must not keep every card it wrote. Its Config.Output.Report is
// given each card's record as it finishes (internal/ui/report adds it to
// the file rather than writing it again).
// Its methods may be called from several goroutines at once, one card
// each.
type Cards struct {
	s   *session
	img *image.Opened
}

// TakeCards runs a write's checks that need no card (the settings; reach,
// whether the readers can be reached at all, before anything is read or
// downloaded) and opens the image to be read once per card (a URL once,
// into the cache), announced as a station's (Started with Watch); with
// Config.Blocks there is no image, only the settings to check. The
// caller says what it is waiting for (Emit) and hands it each card found
// (Write), then closes it. On an error nothing is left open, and the
// Cards returned holds only its Result.
func TakeCards(ctx context.Context, cfg Config, reach func(context.Context) error) (*Cards, error) {
	s := newSession(cfg)
	s.keep = RecentCards
	if cfg.Blocks != nil {
		if err := s.checkSettings(ctx, blocksShape(reach), 0); err != nil {
			return &Cards{s: s}, err
		}
		s.emit(Started{Image: cfg.Blocks.What(), TransferSize: s.transfer, Buffers: buffersFor(s.transfer, cfg.Engine.Buffers), Watch: true})
		return &Cards{s: s}, nil
	}
	img, _, err := s.prepareImage(ctx, writeShape{cards: 1, how: image.ReadPerCard, many: true, watch: true, reach: reach})
	if err != nil {
		return &Cards{s: s}, err
	}
	return &Cards{s: s, img: img}, nil
}

// Close closes the image. The report file is the caller's to close
// (whole after every card).
func (c *Cards) Close() {
	if c.img != nil {
		c.img.Close()
	}
}

// Result is the session's: the last RecentCards cards, every card
// counted. It may be read once no card is being written.
func (c *Cards) Result() *Result { return c.s.res }

// Tally is every card finished so far, counted.
func (c *Cards) Tally() Tally {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.s.res.Tally
}

// Emit tells e to the session's Observer, in order with its own events.
func (c *Cards) Emit(e Event) { c.s.emit(e) }

// Image is the image as messages show it, or what a Config.Blocks
// writes.
func (c *Cards) Image() string {
	if c.s.cfg.Blocks != nil {
		return c.s.cfg.Blocks.What()
	}
	return image.Shown(c.s.cfg.Image.Path)
}

// OpenOptions are how the session's cards are opened: forced or not, the
// image's own disk refused, the command's readers, each reader's notices
// told.
func (c *Cards) OpenOptions() drive.Options { return c.s.openOptions(0) }

// BufferSets is the memory bound of the cards written at once: a
// channel of as many sets of buffers as fit in blockdev.MaxBufferMemory
// at the transfer size asked (a card that takes less needs less), a
// card's write holding one.
func (c *Cards) BufferSets() chan struct{} { return c.s.bufferSets() }

// Write writes the image (or the card's own blocks) to the card d, the
// n-th found (its number in the run, for a customisation's {n}), with its
// own decode, the checks, the write, verify and eject, records it, and
// returns its outcome.
func (c *Cards) Write(ctx context.Context, d *drive.Device, n int) *Outcome {
	k := &card{d: d, n: n}
	if c.s.cfg.Blocks != nil {
		c.s.writeOneBlocks(ctx, k)
	} else {
		c.writeOne(ctx, k)
	}
	return c.record(k)
}

// Failed records the n-th card found, whose reader or slot could not be
// opened (err; a *drive.Error names it), and returns its outcome.
func (c *Cards) Failed(n int, err error) *Outcome {
	k := &card{n: n}
	k.out.Target = "reader"
	var te *drive.Error
	if errors.As(err, &te) && te.Target != "" {
		k.out.Target = te.Target
	}
	k.fail(err)
	return c.record(k)
}

// record adds a finished card to the session's result and report without
// its digests (32 bytes a write command, 128 KiB for a 4 GiB image): they
// served its verify, and a station that keeps every outcome for a week
// must not keep them too.
func (c *Cards) record(k *card) *Outcome {
	k.out.Write.Digests.List, k.digests = nil, nil
	c.s.record(k)
	return &k.out
}

// writeOne writes one card: its own decode, the checks, the write.
func (c *Cards) writeOne(ctx context.Context, k *card) {
	s := c.s
	src, err := c.img.OpenAgain(ctx)
	if err != nil {
		k.out.Target = k.d.Name
		k.fail(err)
		return
	}
	defer src.Close()
	s.checkCard(ctx, k, src)
	if k.failed() {
		return
	}
	s.writeCards(ctx, src, &writePlan{}, []*card{k})
}
