package session

import (
	"context"
	"io"
	"sync"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// Blocks is what a session writes that is not an image: each card's own
// blocks, made once the card is open, since they depend on it (erase's
// pattern over its whole capacity, format's file system for its size and
// erase unit). They are written as an image is, with every promise of a
// write: the checks, one question or --yes, the first transfer zeroed
// first and written last, the sync, the read-back, many cards and --watch.
type Blocks interface {
	// What says what is written, for messages: "zeros", "a FAT32 file
	// system".
	What() string
	// For is the blocks for the card d: a raw image source (image.New)
	// no larger than the card.
	For(ctx context.Context, d *drive.Device) (*image.Source, error)
	// Prepare runs on each card once it is confirmed, before its first
	// write (erase's unmap of every block); note says what it did. nil
	// error, nothing to do.
	Prepare(ctx context.Context, d *drive.Device, note func(string)) error
}

// blocksSource is the ReaderAt a Blocks implementation hands image.New:
// the session reads it as a raw image of Size bytes.
type blocksSource interface {
	io.ReaderAt
	Size() int64
}

// NewBlocksSource is the image source of generated blocks: a raw image of
// r.Size() bytes read through r.
func NewBlocksSource(r blocksSource) (*image.Source, error) {
	return image.New(io.NewSectionReader(r, 0, r.Size()), r.Size())
}

// blocksShape is how a write of blocks is checked before anything is
// opened (the preflight's stage 1, with nothing read ahead): one ring for
// each card, the cards' rings at once bounded by bufferSets; reach says
// whether the readers can be reached at all.
func blocksShape(reach func(context.Context) error) writeShape {
	return writeShape{cards: 1, reach: reach}
}

// runBlocks is Run for Config.Blocks: every card opened and checked with
// its own blocks, one question for all, then each written on its own (its
// blocks are its own), at once, within the memory bound, as a station
// writes cards; the same records and exit policy.
func (s *session) runBlocks(ctx context.Context, specs []drive.Spec) (*Result, error) {
	// A reader this user may not open is said before anything is
	// opened, with what would give access.
	reach := func(ctx context.Context) error { return s.cfg.Targets.Readers.CheckAccess(ctx, specs) }
	if err := s.checkSettings(ctx, blocksShape(reach), 0); err != nil {
		return s.res, err
	}
	names := make([]string, len(specs))
	for i, t := range specs {
		names[i] = t.Raw
	}
	s.emit(Started{Image: s.cfg.Blocks.What(), Targets: names, TransferSize: s.transfer, Buffers: buffersFor(s.transfer, s.cfg.Engine.Buffers)})
	devs, errs := drive.OpenAll(ctx, specs, s.openOptions(0))
	cards := make([]*card, len(specs))
	srcs := make([]*image.Source, len(specs))
	defer func() {
		for i, d := range devs {
			if srcs[i] != nil {
				srcs[i].Close()
			}
			if d != nil {
				d.Close()
			}
		}
	}()
	var first *image.Source // the question's: each card has its own
	for i, t := range specs {
		c := &card{d: devs[i], spec: t.Raw, n: i + 1, out: Outcome{Target: t.Raw}}
		cards[i] = c
		if errs[i] != nil {
			c.fail(errs[i])
			continue
		}
		if srcs[i] = s.openBlocks(ctx, c); first == nil {
			first = srcs[i]
		}
	}
	live, err := s.confirmCards(cards, first)
	if err != nil {
		return s.res, err
	}
	sets := s.bufferSets()
	var wg sync.WaitGroup
	for _, c := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sets <- struct{}{}
			defer func() { <-sets }()
			s.writeBlocks(ctx, c, srcs[c.n-1])
		}()
	}
	wg.Wait()
	return s.res, s.finish(cards, nil)
}

// openBlocks makes an open card's blocks and runs the pre-write checks on
// them (checkCard, the preflight's stage 3); nil when it could not (the
// card's error says why).
func (s *session) openBlocks(ctx context.Context, c *card) *image.Source {
	src, err := s.cfg.Blocks.For(ctx, c.d)
	if err != nil {
		d := c.d
		c.out.Target, c.out.Capacity, c.out.Serial = d.Name, d.Capacity(), readerSerial(d)
		c.fail(err)
		return nil
	}
	s.checkCard(ctx, c, src)
	return src
}

// writeBlocks prepares a confirmed card and writes its blocks.
func (s *session) writeBlocks(ctx context.Context, c *card, src *image.Source) {
	note := func(msg string) { s.emit(Note{Card: c.d.Name, Message: msg}) }
	if err := s.cfg.Blocks.Prepare(ctx, c.d, note); err != nil {
		c.d.Keep()
		c.fail(err)
		return
	}
	s.writeCards(ctx, src, &writePlan{}, []*card{c})
}

// writeOneBlocks is a station's card of a blocks session: its own blocks
// made and checked, then written.
func (s *session) writeOneBlocks(ctx context.Context, c *card) {
	src := s.openBlocks(ctx, c)
	if src == nil {
		return
	}
	defer src.Close()
	if c.failed() {
		return
	}
	s.writeBlocks(ctx, c, src)
}

// bufferMemory is what one card's write takes of buffers at the transfer
// size asked (a card that takes less needs less).
func (s *session) bufferMemory() int64 {
	return pipeline.BufferMemory(s.transfer, buffersFor(s.transfer, s.cfg.Engine.Buffers))
}

// bufferSets bounds the writes under way at once, each with its own ring,
// to what fits in blockdev.MaxBufferMemory: a card waits for a free set
// when they would not. A station bounds its cards by the same count
// (Cards.BufferSets).
func (s *session) bufferSets() chan struct{} {
	return make(chan struct{}, max(blockdev.MaxBufferMemory/s.bufferMemory(), 1))
}

// openOptions are how the session's cards are opened: forced or not, the
// image's own disk refused, the command's readers, each reader's notices
// told; newFile is the size of a file: target made for the image.
func (s *session) openOptions(newFile int64) drive.Options {
	return drive.Options{Force: s.cfg.Targets.Force, Image: s.cfg.Image.Path, NewFileSize: newFile, Readers: s.cfg.Targets.Readers,
		OnNotice: s.onNotice}
}
