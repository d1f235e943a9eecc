package usbms

import (
	"context"
	"errors"
	"fmt"
)

// result is the outcome of one command that reached its CSW.
type result struct {
	n      int // valid data bytes
	status uint8
}

// attempt runs one command once: CBW, data phase, CSW. It handles the
// recoveries BOT allows without a reset (a stalled data phase, one stalled
// CSW read); every other failure is returned for the ladder in run.
func (t *Transport) attempt(ctx context.Context, r request) (result, error) {
	t.tag++
	tag := t.tag
	length := uint32(len(r.data))
	encodeCBW(&t.cbw, tag, uint8(r.lun), r.cdb, r.dir, length)
	n, err := t.ep.BulkOut(ctx, t.cbw[:])
	if err != nil {
		return result{}, fmt.Errorf("send CBW: %w", err)
	}
	if n != cbwLen {
		return result{}, fmt.Errorf("send CBW: device took %d of %d bytes", n, cbwLen)
	}
	moved, err := t.dataPhase(ctx, r.dir, r.data)
	if err != nil {
		return result{}, err
	}
	c, err := t.readCSW(ctx, tag, length)
	if err != nil {
		return result{}, err
	}
	if c.status == statusPhase {
		return result{status: c.status}, ErrPhaseError
	}
	return result{n: validBytes(length, moved, c.residue), status: c.status}, nil
}

// dataPhase moves data in chunks of at most ChunkSize bytes. A stall ends
// the phase early: the halt is cleared and the CSW will tell what happened.
// A short IN transfer also ends it, as a short packet does on the bus.
func (t *Transport) dataPhase(ctx context.Context, dir Direction, data []byte) (int, error) {
	moved := 0
	for moved < len(data) {
		chunk := data[moved:min(len(data), moved+t.opts.ChunkSize)]
		var n int
		var err error
		if dir == DataIn {
			n, err = t.ep.BulkIn(ctx, chunk)
		} else {
			n, err = t.ep.BulkOut(ctx, chunk)
		}
		moved += max(0, min(n, len(chunk)))
		if errors.Is(err, ErrStall) {
			if cerr := t.ep.ClearHalt(ctx, dir == DataIn); cerr != nil {
				return moved, fmt.Errorf("clear halt on bulk-%s after data stall: %w", dir, cerr)
			}
			return moved, nil
		}
		if err != nil {
			return moved, fmt.Errorf("data %s at byte %d of %d: %w", dir, moved, len(data), err)
		}
		if n < len(chunk) {
			return moved, nil
		}
	}
	return moved, nil
}

// readCSW reads and checks the CSW. A stall is cleared and the read tried
// once more (BOT 6.7.2); a zero-length packet is skipped once, as Linux does
// for devices that send one after the data.
func (t *Transport) readCSW(ctx context.Context, tag, length uint32) (csw, error) {
	stalled, empty := false, false
	for {
		n, err := t.ep.BulkIn(ctx, t.csw[:])
		switch {
		case errors.Is(err, ErrStall) && !stalled:
			stalled = true
			if cerr := t.ep.ClearHalt(ctx, true); cerr != nil {
				return csw{}, fmt.Errorf("clear halt on bulk-in after CSW stall: %w", cerr)
			}
			continue
		case err != nil:
			return csw{}, fmt.Errorf("read CSW: %w", err)
		case n == 0 && !empty:
			empty = true
			continue
		}
		return parseCSW(t.csw[:max(0, min(n, cswLen))], tag, length)
	}
}
