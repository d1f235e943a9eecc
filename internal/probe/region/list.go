package region

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// Card is what a list of saved regions records of the card they came
// from, so that they go back onto that card and no other.
type Card struct {
	Target    string // as the user named it
	Capacity  int64  // bytes
	BlockSize int
	// Holds is how many bytes from the start the card keeps what is
	// written (a fake card's usable size; Capacity when not known): the
	// regions past it are written back but cannot be read back.
	Holds int64
}

// List is regions of one card saved before they were written over, in
// the order they go back (the latest saved first, so that a block saved
// twice, or two blocks that share flash on a card that wraps, end with
// what was saved first: the card's own bytes).
type List struct {
	Card  Card
	Saved []*Saved
}

// listMagic opens a list file.
const listMagic = "# usbflash saved regions v1"

// Kept names the files a List was kept in: the saved bytes at their own
// offsets in Data (a sparse file), and the list of regions in Path.
type Kept struct {
	Path, Data string
	Regions    int
}

// Keep writes l to two new files in dir (the system's temporary
// directory when ""), named after pattern as os.CreateTemp names them:
// the saved bytes at their own offsets (pattern with ".img"), and beside
// it the list of regions (the same name with ".regions"), which Load
// reads back. It reads only memory.
func (l *List) Keep(dir, pattern string) (Kept, error) {
	f, err := os.CreateTemp(dir, pattern+".img")
	if err != nil {
		return Kept{}, err
	}
	k := Kept{Data: f.Name(), Path: strings.TrimSuffix(f.Name(), ".img") + ".regions", Regions: len(l.Saved)}
	err = l.writeData(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.writeList(k)
	}
	if err != nil {
		os.Remove(k.Data)
		os.Remove(k.Path)
		return Kept{}, err
	}
	return k, nil
}

// writeData writes each region's bytes at its own offset, the last in
// restore order last: where regions overlap, the file holds the bytes
// saved first.
func (l *List) writeData(f *os.File) error {
	for _, s := range l.Saved {
		if _, err := f.WriteAt(s.data, s.Region.Offset); err != nil {
			return err
		}
	}
	return f.Sync()
}

func (l *List) writeList(k Kept) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n# the bytes of each region are at its own offset in the data file; they go back in this order\n", listMagic)
	fmt.Fprintf(&b, "target %s\ncapacity %d\nblock-size %d\nholds %d\ndata %s\n", l.Card.Target, l.Card.Capacity, l.Card.BlockSize, l.Card.Holds, filepath.Base(k.Data))
	for _, s := range l.Saved {
		fmt.Fprintf(&b, "region %d %d\n", s.Region.Offset, s.Region.Length)
	}
	// O_EXCL: the name was made unique for the data file, beside it.
	f, err := os.OpenFile(k.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, b.String())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ListError is a list of saved regions that cannot be read, or whose
// data file does not hold them.
type ListError struct {
	Path string
	Err  error
}

func (e *ListError) Error() string { return fmt.Sprintf("saved regions %s: %v", e.Path, e.Err) }
func (e *ListError) Unwrap() error { return e.Err }

// Class: the list is what the caller named.
func (e *ListError) Class() failure.Class { return failure.Usage }

// Load reads a list Keep wrote, and the saved bytes from its data file
// (named in it, in the same directory).
func Load(path string) (*List, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &ListError{Path: path, Err: err}
	}
	defer f.Close()
	l, data, err := parseList(f)
	if err != nil {
		return nil, &ListError{Path: path, Err: err}
	}
	if err := l.readData(filepath.Join(filepath.Dir(path), data)); err != nil {
		return nil, &ListError{Path: path, Err: err}
	}
	return l, nil
}

func parseList(r io.Reader) (*List, string, error) {
	sc := bufio.NewScanner(r)
	if !sc.Scan() || sc.Text() != listMagic {
		return nil, "", errors.New("not a list of saved regions: its first line is not " + strconv.Quote(listMagic))
	}
	l := &List{}
	var data string
	for n := 2; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, _ := strings.Cut(line, " ")
		var err error
		switch key {
		case "target":
			l.Card.Target = val
		case "capacity":
			l.Card.Capacity, err = strconv.ParseInt(val, 10, 64)
		case "block-size":
			l.Card.BlockSize, err = strconv.Atoi(val)
		case "holds":
			l.Card.Holds, err = strconv.ParseInt(val, 10, 64)
		case "data":
			data = val
		case "region":
			var r Region
			if _, err = fmt.Sscanf(val, "%d %d", &r.Offset, &r.Length); err == nil {
				l.Saved = append(l.Saved, &Saved{Region: r})
			}
		default:
			err = fmt.Errorf("unknown key %q", key)
		}
		if err != nil {
			return nil, "", fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	bs := int64(l.Card.BlockSize)
	switch {
	case data == "" || filepath.Base(data) != data:
		return nil, "", errors.New("no data file named in the same directory")
	case bs <= 0 || l.Card.Capacity <= 0 || l.Card.Capacity%bs != 0:
		return nil, "", fmt.Errorf("capacity %d and block size %d are no card's", l.Card.Capacity, bs)
	}
	for _, s := range l.Saved {
		r := s.Region
		if r.Offset < 0 || r.Length <= 0 || r.Offset%bs != 0 || r.Length%bs != 0 || r.End() > l.Card.Capacity {
			return nil, "", fmt.Errorf("region at byte %d, %d bytes long, is not whole blocks of the card", r.Offset, r.Length)
		}
	}
	return l, data, nil
}

func (l *List) readData(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, s := range l.Saved {
		s.BlockSize = l.Card.BlockSize
		s.Device = l.Card.Target
		s.data = aligned.Bytes(int(s.Region.Length)) // O_DIRECT devices take it as it is
		if _, err := f.ReadAt(s.data, s.Region.Offset); err != nil {
			return fmt.Errorf("%s: the region at byte %d: %w", path, s.Region.Offset, err)
		}
	}
	return nil
}

// CardMismatchError is a card that is not the one the regions were saved
// from: its capacity or block size differs.
type CardMismatchError struct {
	Device              string
	Capacity, Want      int64
	BlockSize, WantSize int
}

func (e *CardMismatchError) Error() string {
	return fmt.Sprintf("%s has %d bytes in %d-byte blocks, but the regions were saved from a card of %d bytes in %d-byte blocks: nothing was written",
		e.Device, e.Capacity, e.BlockSize, e.Want, e.WantSize)
}

// Class: a safety check refused the write.
func (e *CardMismatchError) Class() failure.Class { return failure.Refused }

// holds is how many bytes from the start the card keeps (Card.Holds, the
// capacity when not known).
func (l *List) holds() int64 {
	if l.Card.Holds <= 0 {
		return l.Card.Capacity
	}
	return l.Card.Holds
}

// Past is what of the regions lies past Card.Holds: how many regions
// reach past it and their bytes there. Restore writes them back (on a
// card that wraps around they land on the blocks below Holds that they
// alias, which is where their bytes came from) but cannot read them back
// on their own.
func (l *List) Past() (regions int, bytes int64) {
	h := l.holds()
	for _, s := range l.Saved {
		if end := s.Region.End(); end > h {
			regions++
			bytes += end - max(s.Region.Offset, h)
		}
	}
	return regions, bytes
}

// Restore writes every region back in the list's order, syncs, and reads
// back those the card holds (below Card.Holds) to compare. A region that
// cannot be written, or reads back different, does not stop it: every
// other region goes back too (one bad block, or a fake's blocks past its
// real size, must not leave the rest of the card holding the work's data),
// and the error, a *PartialError, names each region not put back. Only the
// context ends it early. name names dev in errors. It refuses, writing
// nothing, a device of another capacity or block size than the card the
// regions came from.
func (l *List) Restore(ctx context.Context, dev blockdev.Device, name string) error {
	capacity := dev.BlockCount() * int64(dev.BlockSize())
	if capacity != l.Card.Capacity || dev.BlockSize() != l.Card.BlockSize {
		return &CardMismatchError{Device: name, Capacity: capacity, Want: l.Card.Capacity, BlockSize: dev.BlockSize(), WantSize: l.Card.BlockSize}
	}
	holds := l.holds()
	partial := &PartialError{Device: name, Regions: len(l.Saved)}
	unwritten := make(map[*Saved]bool)
	for _, s := range l.Saved {
		if err := ctx.Err(); err != nil {
			return failure.Wrap(failure.Device, fmt.Errorf("restoring the saved regions of %s: %w", name, err))
		}
		if err := s.WriteBack(ctx, dev); err != nil {
			unwritten[s] = true
			partial.Failed = append(partial.Failed, Unrestored{Region: s.Region, Past: s.Region.End() > holds, Err: err})
		}
	}
	if len(unwritten) < len(l.Saved) {
		if err := dev.Sync(ctx); err != nil {
			return failure.Wrap(failure.Device, fmt.Errorf("restoring the saved regions of %s: sync: %w", name, err))
		}
	}
	for _, s := range l.Saved {
		if unwritten[s] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return failure.Wrap(failure.Verify, fmt.Errorf("verifying the restored regions of %s: %w", name, err))
		}
		if v := s.Before(holds); v != nil {
			if err := v.Verify(ctx, dev); err != nil {
				partial.Failed = append(partial.Failed, Unrestored{Region: s.Region, Written: true, Past: s.Region.End() > holds, Err: err})
			}
		}
	}
	if len(partial.Failed) > 0 {
		return partial
	}
	return nil
}

// Unrestored is a saved region Restore could not put back.
type Unrestored struct {
	Region Region
	// Written: the region was written back but reads back different (or
	// cannot be read); otherwise its write failed.
	Written bool
	// Past: the region reaches past what the card holds (Card.Holds): on
	// a card that wraps around, onto blocks below it that it aliases.
	Past bool
	Err  error
}

// PartialError is a restore that put back every region it could, but not
// these: the other regions hold their saved bytes again.
type PartialError struct {
	Device  string
	Regions int // how many the list holds
	Failed  []Unrestored
}

// maxListed is how many unrestored regions an error names one by one.
const maxListed = 4

func (e *PartialError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d saved regions not put back (the other %d were):", e.Device, len(e.Failed), e.Regions, e.Regions-len(e.Failed))
	for i, u := range e.Failed {
		if i == maxListed {
			fmt.Fprintf(&b, "; %d more", len(e.Failed)-i)
			break
		}
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " bytes %d to %d", u.Region.Offset, u.Region.End())
		if u.Past {
			b.WriteString(" (past the card's real size)")
		}
		fmt.Fprintf(&b, ": %v", u.Err)
	}
	return b.String()
}

// Unwrap is every region's error, so that errors.Is finds a device that
// is gone or a stop request among them.
func (e *PartialError) Unwrap() []error {
	errs := make([]error, len(e.Failed))
	for i, u := range e.Failed {
		errs[i] = u.Err
	}
	return errs
}

// Class: a region that could not be written is the device's failure; one
// written that reads back different, a failed verification.
func (e *PartialError) Class() failure.Class {
	for _, u := range e.Failed {
		if !u.Written {
			return failure.Device
		}
	}
	return failure.Verify
}
