package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/usbflash/usbflash/internal/lib/flock"
)

// A slot whose card comes and goes while the reader stays open, as in a
// station's reader, where a person takes each card out and puts the next
// one in. The card is a file: in the slot while the file exists and holds
// at least one block (its whole blocks are the card); the slot is empty
// while the file is missing or holds less (0 bytes: `truncate -s 0`). The
// device looks before each command, as a reader reads its card-detect
// switch, and a card other than the one it saw last (another file, or the
// same after the slot was empty) raises UNIT ATTENTION 6/28/00, not ready
// to ready change, as real readers do.

// cardFile is one slot's card file, opened while it is in the slot.
type cardFile struct {
	path      string
	block     int64
	protected bool // every card write-protected (wp=)
	f         *os.File
	st        fs.FileInfo // of f, when it was opened
	size      int64       // its whole blocks, in bytes
	readOnly  bool        // opened read-only: the system would not let it be written
}

// look says what the slot holds now: the card's medium and size (nil
// when empty), and whether it is another card than the last look's.
func (c *cardFile) look() (m Medium, size int64, readOnly, changed bool) {
	st, err := os.Stat(c.path)
	if err != nil || !st.Mode().IsRegular() || st.Size() < c.block {
		c.release()
		return nil, 0, false, false
	}
	whole := st.Size() / c.block * c.block
	if c.f != nil && os.SameFile(c.st, st) && whole == c.size {
		return c.f, c.size, c.readOnly, false
	}
	c.release()
	if err := c.take(whole); err != nil {
		return nil, 0, false, false // held by another process, or unreadable: no card to use
	}
	return c.f, c.size, c.readOnly, true
}

// take opens and locks the card file, read-only when the system will not
// let this process write it (a write-protected card).
func (c *cardFile) take(size int64) error {
	flag := os.O_RDWR
	if c.protected {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(c.path, flag, 0)
	readOnly := c.protected
	if err != nil && flag == os.O_RDWR && refusesWrites(err) {
		f, err = os.OpenFile(c.path, os.O_RDONLY, 0)
		readOnly = true
	}
	if err != nil {
		return err
	}
	if err := flock.Lock(f, !readOnly); err != nil {
		f.Close()
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	c.f, c.st, c.size, c.readOnly = f, st, size, readOnly
	return nil
}

// release closes the card file it holds.
func (c *cardFile) release() {
	if c.f != nil {
		c.f.Close()
		c.f, c.st, c.size = nil, nil, 0
	}
}

// Close lets go of the card (Device.Close).
func (c *cardFile) Close() error {
	c.release()
	return nil
}

// slot is what a LUN whose card comes and goes knows besides its file:
// what becomes of each card's medium (a fake card, a write-back cache).
type slot struct {
	card *cardFile
	wrap func(m Medium, capacity int64) (Medium, error)
}

// refresh looks at l's slot before a command: an empty slot is NoMedium,
// a card that was not there before comes in with its capacity and raises
// UNIT ATTENTION (unless quiet: the card in the slot when the reader
// opened, which its power-on announces).
func (l *lun) refresh(quiet bool) error {
	if l.slot == nil {
		return nil
	}
	m, size, readOnly, changed := l.slot.card.look()
	if m == nil {
		l.cfg.NoMedium, l.medium = true, nil
		return nil
	}
	if !changed && !l.cfg.NoMedium {
		return nil
	}
	wrapped, err := l.slot.wrap(m, size)
	if err != nil {
		l.slot.card.release()
		l.cfg.NoMedium, l.medium = true, nil
		return err
	}
	l.medium, l.cfg.Blocks, l.cfg.NoMedium, l.ejected = wrapped, size/l.blockSize, false, false
	l.cfg.WriteProtected = l.slot.card.protected || readOnly
	if !quiet {
		ua := senseMediumChanged()
		l.unitAttention = &ua
	}
	return nil
}

// OpenSlots is Open for a reader whose cards come and go while it is open
// (a station's reader): PATH is the card of LUN 0 and PATH.lunK that of
// LUN K (luns=N), each in its slot while the file exists with at least one
// block in it and an empty slot otherwise; the device looks before every
// command and raises UNIT ATTENTION when a new card is in. Neither PATH
// nor the slots' files need exist; size= and nomedium= do not apply (the
// files say both), every other option does, fake= and write-back= to each
// card as it comes in.
func OpenSlots(spec string) (*Device, error) {
	o, path, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	if o.size > 0 || o.nomedium {
		return nil, &SpecError{Spec: spec, Err: errors.New("options size= and nomedium= do not apply to a reader whose cards come and go: its card files say both")}
	}
	cfg := Config{
		StallGetMaxLUN: o.stallMaxLUN, Speed: o.speed, Latency: o.latency,
		WriteSpeed: o.writeSpeed, Page: o.page, AllocationUnit: o.au, AUCost: o.auCost,
		Serial: o.serial, Product: o.product,
	}
	o.reader.apply(&cfg)
	block := int64(o.block)
	wrap := func(m Medium, capacity int64) (Medium, error) {
		// A card smaller than real= is genuine (fakeLUN): no capacity to
		// check the options against.
		fake, isFake, err := o.fake.fake(0, block)
		if err != nil {
			return nil, err
		}
		if isFake {
			m = fakeLUN(LUN{Medium: m, BlockSize: o.block, Blocks: capacity / block}, fake)
		}
		return o.writeBack.wrap(m, block), nil
	}
	var cards []*cardFile
	for k := range o.luns {
		cfg.LUNs = append(cfg.LUNs, LUN{BlockSize: o.block, NoMedium: true, Removable: o.removable, WriteProtected: o.wp,
			Vendor: o.vendor, Product: o.product, Revision: o.revision,
			RejectModeSense: o.rejectModeSense, RejectSyncCache: o.rejectSync, MaxTransferBlocks: o.maxTransfer})
		p := path
		if k > 0 {
			p = fmt.Sprintf("%s.lun%d", path, k)
		}
		cards = append(cards, &cardFile{path: p, block: block, protected: o.wp})
	}
	d, err := New(cfg)
	if err != nil {
		return nil, &SpecError{Spec: spec, Err: err}
	}
	for i, c := range cards {
		d.luns[i].slot = &slot{card: c, wrap: wrap}
		d.closers = append(d.closers, c)
		if err := d.luns[i].refresh(true); err != nil {
			d.Close()
			return nil, &SpecError{Spec: spec, Err: fmt.Errorf("%s: %w", c.path, err)}
		}
	}
	for _, f := range o.faults {
		d.Inject(f)
	}
	return d, nil
}

// ReaderConfig is the reader spec describes without opening it or its
// cards: its USB identity, transports and quirks (Config without LUNs),
// what a bus of such readers lists before one is opened.
func ReaderConfig(spec string) (Config, error) {
	o, _, err := parseSpec(spec)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Serial: o.serial, Product: o.product}
	o.reader.apply(&cfg)
	if cfg.Manufacturer == "" {
		cfg.Manufacturer = DefaultManufacturer
	}
	if cfg.Product == "" {
		cfg.Product = DefaultProduct
	}
	return cfg, nil
}
