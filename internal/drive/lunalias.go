package drive

import (
	"bytes"
	"context"
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/usbms"
)

// A reader that ignores the LUN field of its commands (Linux needs quirk
// SINGLE_LUN for such readers) reports several LUNs that all address one
// medium: a write to "slot 1" lands on slot 0's card, and the read-back
// goes the same wrong way and matches. Before a slot of a multi-LUN
// reader is written, each other slot with a card is asked whether it is
// the same medium (sameMedium). A target without /LUN on such a reader
// sees two loaded slots and is asked to choose one, as before: nothing
// but the slot chosen is ever written.

// checkOwnMedium refuses LUN chosen of reader when a lower LUN answers for
// the same medium, and tells (NoticeOneMedium) when a higher one does:
// writing through the lowest LUN of one medium is writing the one card
// the reader addresses.
func checkOwnMedium(ctx context.Context, tr *usbms.Transport, reader string, chosen *usbms.LUN, maxLUN int, opts Options) error {
	for n := 0; n <= maxLUN; n++ {
		if n == chosen.Number() {
			continue
		}
		other := usbms.ProbeLUN(ctx, tr, n, usbms.LUNOptions{})
		if other.LUN == nil {
			if err := ctx.Err(); err != nil {
				return err
			}
			continue
		}
		same, err := sameMedium(ctx, chosen, other.LUN)
		switch {
		case err != nil:
			return &Error{class: failure.Device, Target: reader, Err: err,
				Msg: fmt.Sprintf("%s: asking LUN %d whether it is LUN %d's medium: %v", reader, n, chosen.Number(), err)}
		case !same:
		case n < chosen.Number():
			return &Error{class: failure.Refused, Target: reader, Err: ErrOneMedium,
				Msg: fmt.Sprintf("%s: LUN %d and LUN %d answer for one medium (a block written through LUN %d read back changed through LUN %d): "+
					"the reader ignores the LUN, and what is written to LUN %d lands on the card LUN %d addresses; nothing was written",
					reader, chosen.Number(), n, chosen.Number(), n, chosen.Number(), n)}
		default:
			tellOneMedium(opts, reader, chosen.Number(), n)
		}
	}
	return nil
}

func tellOneMedium(opts Options, reader string, used, other int) {
	if opts.OnNotice == nil {
		return
	}
	opts.OnNotice(reader, observe.Notice{Kind: observe.NoticeOneMedium,
		Text: fmt.Sprintf("%s: LUN %d answers for the same medium as LUN %d (the reader ignores the LUN): using LUN %d", reader, other, used, used)})
}

// sameMedium tells whether LUNs a and b address one medium. LUNs that
// differ in identity, capacity, block 0 or the middle block are two; when
// all of those are alike (two blank cards alike, or one medium), the
// middle block of a is changed, read through b, and put back: only one
// medium shows the change through both. Only a, the LUN to be written, is
// written, and its block is back before this returns.
func sameMedium(ctx context.Context, a, b *usbms.LUN) (bool, error) {
	if a.BlockSize() != b.BlockSize() || a.BlockCount() != b.BlockCount() || a.Inquiry() != b.Inquiry() {
		return false, nil
	}
	bs := a.BlockSize()
	mid := a.BlockCount() / 2
	read := func(l *usbms.LUN, lba int64) ([]byte, error) {
		p := make([]byte, bs)
		return p, l.ReadBlocks(ctx, lba, p)
	}
	var orig []byte
	for _, lba := range []int64{0, mid} {
		pa, err := read(a, lba)
		if err != nil {
			return false, err
		}
		pb, err := read(b, lba)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(pa, pb) {
			return false, nil
		}
		orig = pa
	}
	marker := make([]byte, bs)
	for i, c := range orig {
		marker[i] = ^c
	}
	if err := a.WriteBlocks(ctx, mid, marker); err != nil {
		return false, err
	}
	seen, rerr := read(b, mid)
	// The block goes back whatever the read said, even after Ctrl-C.
	if err := a.WriteBlocks(context.WithoutCancel(ctx), mid, orig); err != nil {
		return false, fmt.Errorf("putting back LBA %d after changing it to compare LUNs: %w", mid, err)
	}
	if back, err := read(a, mid); err != nil || !bytes.Equal(back, orig) {
		return false, fmt.Errorf("LBA %d does not read back as it was after changing it to compare LUNs (%v)", mid, err)
	}
	if rerr != nil {
		return false, rerr
	}
	return bytes.Equal(seen, marker), nil
}
