// Package cardbench measures a card reader and its card: throughput at each
// transfer size in several regions, the erase unit from straddling reads,
// random 4 KiB operations and the round trip of one command.
package cardbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// Sizes of the sweep.
const (
	// MaxSize is the largest transfer the sweep tries by default.
	MaxSize = 32 << 20
	// USB2RequestCap is the largest request Linux sends to a USB 2 disk
	// (max_sectors 240): the size a kernel path is stuck with.
	USB2RequestCap = 120 << 10
	// defaultRegionLength bounds each region of a read sweep: enough for
	// any point on a USB 3 reader without reading the whole card.
	defaultRegionLength = 256 << 20
	// RegionAlign is where read regions start: a multiple of every common
	// erase unit, so a sweep's transfers do not straddle one by accident.
	RegionAlign = 4 << 20
)

// Operations and paths as points name them.
const (
	OpRead  = "read"
	OpWrite = "write"
	// PathDirect is usbflash's own path: BOT and SCSI from user space.
	PathDirect = "direct"
)

// Sizes returns the sweep's transfer sizes: every power of two from one
// block to max, and USB2RequestCap when it is a whole number of blocks and
// within max, in increasing order.
func Sizes(blockSize int, max int64) []int64 {
	var out []int64
	for n := int64(blockSize); n <= max; n *= 2 {
		if n < USB2RequestCap && 2*n > USB2RequestCap && USB2RequestCap%int64(blockSize) == 0 && USB2RequestCap <= max {
			out = append(out, n, USB2RequestCap)
			continue
		}
		out = append(out, n)
	}
	return out
}

// Region is a byte range of the card a measurement stays in.
type Region = region.Region

// ReadRegions returns the start, middle and end of a card of capacity
// bytes: each a third of the card, at most length bytes (256 MiB when 0)
// and at least MaxSize (so the largest transfer fits; on a card smaller
// than three of those the regions overlap), starting and ending on
// multiples of align.
func ReadRegions(capacity, length, align int64) []Region {
	return readRegions(capacity, length, 0, align)
}

// readRegions is ReadRegions with regions that hold at least one transfer
// of fit bytes, as much of the card as there is (past align's multiples
// when fit is not one).
func readRegions(capacity, length, fit, align int64) []Region {
	if length <= 0 {
		length = defaultRegionLength
	}
	length = max(length, fit)
	length = min(length, max(capacity/3, min(capacity, max(MaxSize, fit))))
	down := func(n int64) int64 { return n / align * align }
	length = max(down(length), min(align, capacity), min(fit, capacity))
	return []Region{
		{Name: "start", Offset: 0, Length: length},
		{Name: "middle", Offset: down((capacity - length) / 2), Length: length},
		{Name: "end", Offset: down(capacity - length), Length: length},
	}
}

// Point is one measurement: transfers of Size bytes, one after another, on
// one path in one region.
type Point struct {
	Path     string
	Op       string
	Size     int64
	Region   string
	Bytes    int64
	Commands int
	Elapsed  time.Duration
	// Usage and IO are what the point cost the process and what the
	// device counted (pipeline.MeterCost): the point event's cost.
	Usage pipeline.Usage
	IO    blockdev.IOCounts
}

// Rate is the point's throughput in bytes per second.
func (p Point) Rate() float64 { return rate(p.Bytes, p.Elapsed) }

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// CacheDropper is a device with a cache between the measurement and the
// medium (a kernel's buffered block device): the sweep drops it before each
// point so every point reads the card, not memory.
type CacheDropper interface {
	DropCache() error
}

// SweepOptions configure Sweep.
type SweepOptions struct {
	Path    string // names the points (PathDirect, a kernel path)
	Op      string // OpRead or OpWrite
	Sizes   []int64
	Regions []Region
	// PointTime bounds each point in each region: transfers go on until it
	// has passed (at least one transfer) or the region ends.
	PointTime time.Duration
	// Progress, if set, is called after each point.
	Progress func(done, total int)
	// Point, if set, receives each point as it is measured.
	Point func(Point)
}

// Sweep measures sequential transfers of every size in every region.
// Writes are followed by a sync inside each point's time, so a device that
// only caches them does not look faster than it is. Writes stay inside the
// regions; what they write is pseudo-random, not the card's data.
func Sweep(ctx context.Context, dev blockdev.Device, o SweepOptions) ([]Point, error) {
	bs := int64(dev.BlockSize())
	largest := int64(0)
	for _, n := range o.Sizes {
		if n <= 0 || n%bs != 0 {
			return nil, fmt.Errorf("transfer size %d is not a whole number of %d-byte blocks", n, bs)
		}
		largest = max(largest, n)
	}
	buf := aligned.Bytes(int(largest))
	if o.Op == OpWrite {
		fillRandom(buf, 1)
	}
	dropper, _ := dev.(CacheDropper)
	var out []Point
	total := len(o.Sizes) * len(o.Regions)
	for _, n := range o.Sizes {
		for _, r := range o.Regions {
			if n > r.Length {
				continue // a region smaller than one transfer says nothing
			}
			if dropper != nil {
				if err := dropper.DropCache(); err != nil {
					return out, fmt.Errorf("%s: dropping the cache before %s at %d bytes: %w", o.Path, r.Name, n, err)
				}
			}
			p, err := measureSequential(ctx, dev, o, r, buf[:n])
			if err != nil {
				return out, err
			}
			out = append(out, p)
			if o.Point != nil {
				o.Point(p)
			}
			if o.Progress != nil {
				o.Progress(len(out), total)
			}
		}
	}
	return out, nil
}

func measureSequential(ctx context.Context, dev blockdev.Device, o SweepOptions, r Region, buf []byte) (Point, error) {
	bs := int64(dev.BlockSize())
	n := int64(len(buf))
	p := Point{Path: o.Path, Op: o.Op, Size: n, Region: r.Name}
	cost := pipeline.MeterCost(dev)
	start := time.Now()
	for off := r.Offset; ; off += n {
		if off+n > r.End() {
			if o.Op == OpRead || p.Commands == 0 {
				break // reads never repeat what a cache may hold
			}
			off = r.Offset
		}
		var err error
		if o.Op == OpWrite {
			err = dev.WriteBlocks(ctx, off/bs, buf)
		} else {
			err = dev.ReadBlocks(ctx, off/bs, buf)
		}
		if err != nil {
			return p, fmt.Errorf("%s %s of %d bytes at byte %d (%s): %w", o.Path, o.Op, n, off, r.Name, err)
		}
		p.Commands++
		p.Bytes += n
		if time.Since(start) >= o.PointTime {
			break
		}
	}
	if o.Op == OpWrite {
		if err := dev.Sync(ctx); err != nil {
			return p, fmt.Errorf("%s: sync after writing %d-byte transfers (%s): %w", o.Path, n, r.Name, err)
		}
	}
	p.Elapsed = time.Since(start)
	p.Usage, p.IO = cost.End()
	return p, nil
}

// fillRandom fills p with bytes no card could compress or recognise.
func fillRandom(p []byte, seed uint64) {
	r := rand.NewChaCha8([32]byte{byte(seed)})
	_, _ = r.Read(p) // never fails
}
