package cardbench

import (
	"fmt"
	"slices"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// MaxTransferSize bounds every transfer size of a run: a sweep holds one
// buffer of its largest size, and no buffer may pass the memory bound every
// command shares.
const MaxTransferSize = blockdev.MaxBufferMemory

// Plan is what a run is asked to measure, before any device is opened.
type Plan struct {
	// Sizes are the transfer sizes asked for, in bytes; nil: every size
	// from one block to MaxSize (Sizes), as many as fit the card.
	Sizes []int64
	// Region, when set, is the only region read, and the one the write
	// tests overwrite; nil: the card's start, middle and end (ReadRegions).
	Region *Region
	// Preserve: the write tests save Region first and restore it after,
	// holding it in memory (at most MaxPreserve).
	Preserve bool
}

// MaxPreserve is the largest region Preserve keeps: region.Save holds it
// in memory.
const MaxPreserve = region.MaxSave

// The settings of a Plan its errors are about (*failure.SettingError,
// around a *PlanError): the caller names them in its own words.
const (
	// SettingSizes: a transfer size asked for.
	SettingSizes failure.Setting = "transfer sizes"
	// SettingRegion: the region given.
	SettingRegion failure.Setting = "region"
	// SettingPreserve: the region given, to be preserved.
	SettingPreserve failure.Setting = "preserved region"
)

// ErrNotWholeBlocks is a PlanError's kind when the size at fault is not a
// whole number of the card's blocks: its Limit is then the block size,
// which sizes must be multiples of, where otherwise it is a bound they may
// not pass.
var ErrNotWholeBlocks = failure.New(failure.Usage, "not whole blocks")

// PlanError is a plan no device can run, or that does not fit the device
// it was opened on: a usage error of the setting at fault, which it comes
// inside. It states the facts; nothing was measured.
type PlanError struct {
	Size  int64 // the transfer size or region length at fault
	Limit int64 // the bound it passes: bytes of memory, of the card or region; with ErrNotWholeBlocks the block size
	What  string
	Kind  error // ErrNotWholeBlocks, or nil: a bound passed
}

func (e *PlanError) Error() string { return e.What }
func (e *PlanError) Unwrap() error { return e.Kind }

// Class is Usage: the plan's sizes and region are the caller's.
func (e *PlanError) Class() failure.Class { return failure.Usage }

// planError is a PlanError about setting s.
func planError(s failure.Setting, e *PlanError) error {
	return &failure.SettingError{Setting: s, Err: e}
}

// Check refuses, before anything is opened, what no device could run: a
// transfer size past the memory bound, a preserved region larger than
// what is kept in memory.
func (p Plan) Check() error {
	for _, n := range p.Sizes {
		if n > MaxTransferSize {
			return planError(SettingSizes, &PlanError{Size: n, Limit: MaxTransferSize,
				What: fmt.Sprintf("transfer size %s is more than the %s one transfer may hold in memory", units.FormatSize(n), units.FormatSize(MaxTransferSize))})
		}
	}
	if r := p.Region; p.Preserve && r != nil && r.Length > MaxPreserve {
		return planError(SettingPreserve, &PlanError{Size: r.Length, Limit: MaxPreserve,
			What: fmt.Sprintf("a region of %s cannot be preserved: it is kept in memory, at most %s", units.FormatSize(r.Length), units.FormatSize(MaxPreserve))})
	}
	return nil
}

// Layout is a plan fitted to one device: the sizes measured, in increasing
// order, and the regions read.
type Layout struct {
	Sizes   []int64
	Regions []Region
}

// Layout fits the plan to a device of capacity bytes in blockSize-byte
// blocks. Sizes asked for must be whole blocks, and no larger than the card
// (or the region given), and the regions grow to hold the largest; of the
// default sizes, those larger than the regions are left out. name names the
// device in errors.
func (p Plan) Layout(name string, capacity int64, blockSize int) (Layout, error) {
	if err := p.Check(); err != nil {
		return Layout{}, err
	}
	bs := int64(blockSize)
	if r := p.Region; r != nil && (r.Offset%bs != 0 || r.Length%bs != 0 || r.Offset+r.Length > capacity) {
		return Layout{}, planError(SettingRegion, &PlanError{Size: r.Length, Limit: capacity,
			What: fmt.Sprintf("region %d:%d is not whole %d-byte blocks inside %s's %d bytes", r.Offset, r.Length, bs, name, capacity)})
	}
	sizes := slices.Clone(p.Sizes)
	for _, n := range sizes {
		switch {
		case n%bs != 0:
			return Layout{}, planError(SettingSizes, &PlanError{Size: n, Limit: bs, Kind: ErrNotWholeBlocks,
				What: fmt.Sprintf("transfer size %s is not a whole number of %s's %d-byte blocks", units.FormatSize(n), name, bs)})
		case p.Region != nil && n > p.Region.Length:
			return Layout{}, planError(SettingSizes, &PlanError{Size: n, Limit: p.Region.Length,
				What: fmt.Sprintf("transfer size %s is larger than the %s region", units.FormatSize(n), units.FormatSize(p.Region.Length))})
		case n > capacity:
			return Layout{}, planError(SettingSizes, &PlanError{Size: n, Limit: capacity,
				What: fmt.Sprintf("transfer size %s is larger than %s, which holds %s", units.FormatSize(n), name, units.FormatSize(capacity))})
		}
	}
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	var regions []Region
	if p.Region != nil {
		regions = []Region{*p.Region}
	} else {
		regions = readRegions(capacity, 0, last(sizes), RegionAlign)
	}
	if sizes == nil {
		for _, n := range Sizes(blockSize, MaxSize) {
			if n <= regions[0].Length {
				sizes = append(sizes, n)
			}
		}
	}
	if len(sizes) == 0 {
		return Layout{}, planError(SettingSizes, &PlanError{Size: bs, Limit: capacity,
			What: fmt.Sprintf("%s holds %d bytes, less than one %d-byte block", name, capacity, bs)})
	}
	return Layout{Sizes: sizes, Regions: regions}, nil
}

func last(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}
