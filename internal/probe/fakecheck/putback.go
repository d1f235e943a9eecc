package fakecheck

import (
	"context"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/internal/probe/region"
)

// PutBackConfig is a session that puts back the blocks a check saved to a
// file when it could not put them back itself (region.List).
type PutBackConfig struct {
	List   string     // the region list the check left beside the saved blocks
	Target drive.Spec // the card they came from
	Force  bool       // open the card although its disk is mounted
	// Readers is the command's enumeration of readers; nil: opened alone.
	Readers *drive.Readers
	// OnNotice is told each notice of the reader (recoveries, quirks).
	OnNotice func(reader string, n observe.Notice)
}

// PutBackResult says what was put back.
type PutBackResult struct {
	Card    string // the card's name
	Regions int    // regions written back
	Bytes   int64  // their bytes
	// Holds is the card's end for what it keeps (a fake's real size), 0
	// when it keeps all it claims: past it the regions could not be read
	// back.
	Holds int64
	// PastRegions reach past Holds, PastBytes of them (region.List.Past):
	// written back where the card puts them (on a card that wraps around,
	// onto the blocks below Holds they alias), not read back on their own.
	PastRegions int
	PastBytes   int64
}

// PutBack loads the list, opens the card, refuses one that cannot be
// written, and writes every region back at its own offset, syncs and reads
// back what the card holds (region.List.Restore refuses a card of another
// capacity or block size before writing).
func PutBack(ctx context.Context, cfg PutBackConfig) (PutBackResult, error) {
	l, err := region.Load(cfg.List)
	if err != nil {
		return PutBackResult{}, err
	}
	d, err := drive.Open(ctx, cfg.Target, drive.Options{Force: cfg.Force, OnNotice: cfg.OnNotice, Readers: cfg.Readers})
	if err != nil {
		return PutBackResult{}, err
	}
	defer d.Close()
	if err := drive.CheckWritable(d); err != nil {
		return PutBackResult{}, err
	}
	if err := l.Restore(ctx, d.Dev, d.Name); err != nil {
		return PutBackResult{}, err
	}
	res := PutBackResult{Card: d.Name, Regions: len(l.Saved)}
	for _, s := range l.Saved {
		res.Bytes += s.Region.Length
	}
	if h := l.Card.Holds; h > 0 && h < l.Card.Capacity {
		res.Holds = h
		res.PastRegions, res.PastBytes = l.Past()
	}
	return res, nil
}
