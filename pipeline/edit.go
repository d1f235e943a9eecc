package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// FirstWriter writes a write's held first transfer in the engine's place
// (WriteOptions.WriteFirst): first is its bytes, padded to whole blocks,
// in the engine's buffer, which it may change; d the digests the write
// recorded (nil without WriteOptions.Digests). It writes first at LBA 0
// after whatever else it writes, so that the card boots nothing until
// every change is on it.
type FirstWriter func(ctx context.Context, dev blockdev.Device, first []byte, d *Digests) error

// Edit is a change to an image written but for its held first transfer,
// as the bytes of the whole card: reads see the card as written (the
// first transfer from its buffer), writes are kept in memory until
// Commit, which writes them and then the first transfer, last.
//
// A verify by digests still covers every byte: a range read from the card
// is checked against the digest taken as it was written (an Edit never
// builds on bytes the card did not keep), and Commit gives each changed
// range the digest of its new bytes (a range no command wrote gets one of
// its own), so the read-back compares the card with what is on it by
// intent.
type Edit struct {
	ctx     context.Context
	dev     blockdev.Device
	bs      int64
	first   []byte
	d       *Digests
	changed map[int64][]byte // block -> its new bytes
	loaded  map[int][]byte   // digest index -> its range's bytes, checked
	plain   map[int64][]byte // blocks read that no digest covers
	maxRead int64            // the largest WRITE and read-ahead, in bytes
}

// editRead is the largest READ an Edit sends: its reads go into Go
// memory, which usbfs must match with memory of its own per command, and
// a station's rings may already hold most of what Linux grants usbfs (16
// MiB by default); a refused 1 MiB READ would mark a good reader as one
// that fails large commands.
const editRead = 128 << 10

// NewEdit is an Edit of the card dev, whose held first transfer is first
// and whose write recorded d (nil: none). d is changed by Commit.
func NewEdit(ctx context.Context, dev blockdev.Device, first []byte, d *Digests) *Edit {
	bs := int64(dev.BlockSize())
	return &Edit{ctx: ctx, dev: dev, bs: bs, first: first, d: d, changed: map[int64][]byte{}, loaded: map[int][]byte{},
		plain: map[int64][]byte{}, maxRead: max(int64(len(first)), DefaultTransferSize) / bs * bs}
}

// Size is the card's size in bytes.
func (e *Edit) Size() int64 { return blockdev.Capacity(e.dev) }

// ReadAt reads the card as the Edit sees it.
func (e *Edit) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > e.Size() {
		return 0, fmt.Errorf("a read of %d bytes at byte offset %d, past the card's %d bytes", len(p), off, e.Size())
	}
	for n := 0; n < len(p); {
		pos := off + int64(n)
		b, err := e.block(pos / e.bs)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], b[pos%e.bs:])
	}
	return len(p), nil
}

// WriteAt changes the card's bytes in memory, until Commit.
func (e *Edit) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > e.Size() {
		return 0, fmt.Errorf("a write of %d bytes at byte offset %d, past the card's %d bytes", len(p), off, e.Size())
	}
	for n := 0; n < len(p); {
		pos := off + int64(n)
		lba := pos / e.bs
		nb, ok := e.changed[lba]
		if !ok {
			old, err := e.block(lba)
			if err != nil {
				return n, err
			}
			nb = slices.Clone(old)
			e.changed[lba] = nb
		}
		n += copy(nb[pos%e.bs:], p[n:])
	}
	return len(p), nil
}

// block is the bytes of block lba as the Edit sees them.
func (e *Edit) block(lba int64) ([]byte, error) {
	if b, ok := e.changed[lba]; ok {
		return b, nil
	}
	if lba*e.bs < int64(len(e.first)) {
		return e.first[lba*e.bs : (lba+1)*e.bs], nil
	}
	if i := e.digestOf(lba); i >= 0 {
		r, err := e.load(i)
		if err != nil {
			return nil, err
		}
		t := e.d.List[i]
		return r[(lba-t.LBA)*e.bs : (lba-t.LBA+1)*e.bs], nil
	}
	if b, ok := e.plain[lba]; ok {
		return b, nil
	}
	// Read ahead up to the next range a digest covers, the card's end or
	// one READ: go-diskfs reads a FAT or a cluster chain in pieces.
	end := min(lba+e.maxRead/e.bs, blockdev.Capacity(e.dev)/e.bs)
	if j := e.digestAfter(lba); j >= 0 {
		end = min(end, e.d.List[j].LBA)
	}
	buf := aligned.Bytes(int((end - lba) * e.bs))
	if err := e.read(lba, buf); err != nil {
		return nil, err
	}
	for k := lba; k < end; k++ {
		if _, ok := e.plain[k]; !ok {
			e.plain[k] = buf[(k-lba)*e.bs : (k-lba+1)*e.bs]
		}
	}
	return e.plain[lba], nil
}

// read reads p from lba in READs of at most editRead bytes.
func (e *Edit) read(lba int64, p []byte) error {
	chunk := max(editRead/e.bs, 1) * e.bs
	for off := int64(0); off < int64(len(p)); off += chunk {
		q := p[off:min(off+chunk, int64(len(p)))]
		at := lba + off/e.bs
		if err := e.dev.ReadBlocks(e.ctx, at, q); err != nil {
			return &DeviceError{Device: blockdev.Name(e.dev, ""), Op: OpRead, LBA: at, Count: int64(len(q)) / e.bs, BlockSize: int(e.bs), Err: err}
		}
	}
	return nil
}

// digestOf is the index of the digest whose range holds lba, -1 if none.
func (e *Edit) digestOf(lba int64) int {
	if e.d == nil {
		return -1
	}
	l := e.d.List
	i := sort.Search(len(l), func(i int) bool { return l[i].LBA+int64(l[i].Blocks) > lba })
	if i < len(l) && l[i].LBA <= lba {
		return i
	}
	return -1
}

// digestAfter is the index of the first digest whose range starts after
// lba, -1 if none.
func (e *Edit) digestAfter(lba int64) int {
	if e.d == nil {
		return -1
	}
	l := e.d.List
	if i := sort.Search(len(l), func(i int) bool { return l[i].LBA > lba }); i < len(l) {
		return i
	}
	return -1
}

// load reads digest i's range from the card (from the held first
// transfer where it lies there) and checks it against the digest.
func (e *Edit) load(i int) ([]byte, error) {
	if r, ok := e.loaded[i]; ok {
		return r, nil
	}
	t := e.d.List[i]
	size := int64(t.Blocks) * e.bs
	var r []byte
	if t.LBA*e.bs < int64(len(e.first)) {
		r = slices.Clone(e.first[t.LBA*e.bs : t.LBA*e.bs+size])
	} else {
		r = aligned.Bytes(int(size))
		if err := e.read(t.LBA, r); err != nil {
			return nil, err
		}
	}
	if sum := DigestOf(r); sum != t.Sum {
		return nil, &VerifyError{Device: blockdev.Name(e.dev, ""), Transfer: true, LBA: t.LBA, Blocks: int64(t.Blocks), Offset: t.LBA * e.bs,
			BlockSize: int(e.bs), WantDigest: t.Sum, GotDigest: sum}
	}
	e.loaded[i] = r
	return r, nil
}

// Changed is the byte ranges the Edit changed, sorted and merged.
func (e *Edit) Changed() []blockdev.Extent {
	var list []blockdev.Extent
	for _, lba := range e.sortedChanged() {
		list = addExtent(list, lba*e.bs, e.bs)
	}
	return list
}

func (e *Edit) sortedChanged() []int64 {
	lbas := make([]int64, 0, len(e.changed))
	for lba := range e.changed {
		lbas = append(lbas, lba)
	}
	slices.Sort(lbas)
	return lbas
}

// Commit writes the changed blocks, then the first transfer, and brings
// the digests up to what the card now holds. Until its last command the
// card's first transfer is still zeroed: an interrupted Commit leaves a
// card that does not boot.
func (e *Edit) Commit() error {
	if err := e.WriteChanges(); err != nil {
		return err
	}
	if err := e.dev.WriteBlocks(e.ctx, 0, e.first); err != nil {
		return &DeviceError{Device: blockdev.Name(e.dev, ""), Op: OpWrite, LBA: 0, Count: int64(len(e.first)) / e.bs, BlockSize: int(e.bs), Err: err}
	}
	return nil
}

// Change is a run of consecutive blocks an Edit changed past its first
// transfer: the bytes the card held there and the new ones.
type Change struct {
	LBA      int64
	Old, New []byte
}

// Changes are the runs WriteChanges writes, one WRITE each, in LBA order,
// with the bytes each held before (a caller keeps both, to undo or to
// finish a customisation that was interrupted).
func (e *Edit) Changes() []Change {
	var list []Change
	for _, r := range e.runs() {
		c := Change{LBA: r[0], Old: make([]byte, r[1]*e.bs), New: make([]byte, r[1]*e.bs)}
		for k := range r[1] {
			copy(c.New[k*e.bs:], e.changed[r[0]+k])
			copy(c.Old[k*e.bs:], e.original(r[0]+k))
		}
		list = append(list, c)
	}
	return list
}

// original is the bytes block lba held before the Edit changed it: a
// changed block was read (and kept) before its first change.
func (e *Edit) original(lba int64) []byte {
	if i := e.digestOf(lba); i >= 0 {
		t := e.d.List[i]
		return e.loaded[i][(lba-t.LBA)*e.bs : (lba-t.LBA+1)*e.bs]
	}
	return e.plain[lba]
}

// runs are the changed blocks past the first transfer in runs of
// consecutive blocks, [first LBA, blocks), each at most one WRITE.
func (e *Edit) runs() [][2]int64 {
	firstBlocks := int64(len(e.first)) / e.bs
	var runs [][2]int64
	for _, lba := range e.sortedChanged() {
		if lba < firstBlocks {
			continue
		}
		if k := len(runs) - 1; k >= 0 && runs[k][0]+runs[k][1] == lba && runs[k][1]*e.bs < e.maxRead {
			runs[k][1]++
		} else {
			runs = append(runs, [2]int64{lba, 1})
		}
	}
	return runs
}

// WriteChanges writes the changed blocks past the first transfer, changes
// the first transfer's bytes (the caller's buffer) as asked, and brings
// the digests up to what the card will hold once that is written: Commit
// but for its last command, for a caller that syncs between them.
func (e *Edit) WriteChanges() error {
	lbas := e.sortedChanged()
	// Every range a digest covers is read and checked before anything of
	// it changes on the card.
	touched := map[int]bool{}
	for _, lba := range lbas {
		if i := e.digestOf(lba); i >= 0 {
			if _, err := e.load(i); err != nil {
				return err
			}
			touched[i] = true
		}
	}
	// The changes inside the first transfer go into its bytes; those past
	// it in runs of consecutive blocks, one WRITE each up to the transfer
	// size.
	firstBlocks := int64(len(e.first)) / e.bs
	for _, lba := range lbas {
		if lba < firstBlocks {
			copy(e.first[lba*e.bs:], e.changed[lba])
		}
	}
	runs := e.runs()
	buf := aligned.Bytes(int(e.maxRead))
	var fresh []TransferDigest
	for _, r := range runs {
		p := buf[:r[1]*e.bs]
		covered := false
		for k := range r[1] {
			copy(p[k*e.bs:], e.changed[r[0]+k])
			covered = covered || e.digestOf(r[0]+k) >= 0
		}
		if err := e.dev.WriteBlocks(e.ctx, r[0], p); err != nil {
			return &DeviceError{Device: blockdev.Name(e.dev, ""), Op: OpWrite, LBA: r[0], Count: r[1], BlockSize: int(e.bs), Err: err}
		}
		if e.d != nil && !covered {
			fresh = append(fresh, TransferDigest{LBA: r[0], Blocks: int32(r[1]), Sum: DigestOf(p)})
		}
		if e.d != nil && covered {
			// Partly covered: each block no digest covers gets its own.
			for k := range r[1] {
				if e.digestOf(r[0]+k) < 0 {
					fresh = append(fresh, TransferDigest{LBA: r[0] + k, Blocks: 1, Sum: DigestOf(e.changed[r[0]+k])})
				}
			}
		}
	}
	if e.d != nil {
		for i := range touched {
			t := e.d.List[i]
			r := e.loaded[i]
			for k := range int64(t.Blocks) {
				if b, ok := e.changed[t.LBA+k]; ok {
					copy(r[k*e.bs:], b)
				}
			}
			e.d.List[i].Sum = DigestOf(r)
		}
		e.d.List = append(e.d.List, fresh...)
		slices.SortFunc(e.d.List, func(a, b TransferDigest) int { return cmp.Compare(a.LBA, b.LBA) })
	}
	return nil
}

var _ io.ReaderAt = (*Edit)(nil)
