package cardbench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// AlignOptions configure Alignment. Zero values take the defaults.
type AlignOptions struct {
	Min, Max int64 // candidate boundaries, powers of two (4 KiB, 32 MiB)
	Access   int64 // bytes per read (4 KiB, at least two blocks)
	Count    int   // boundaries tried per candidate (8, even)
	Rounds   int   // each read is repeated, the fastest counts (3)
	// Clock is what reads are timed on; nil: the wall clock. A
	// simulated reader's modelled clock (sim.Device's Stats().ModelTime
	// with Config.VirtualClock) times each read by its speed model alone,
	// whatever the host's load.
	Clock func() time.Duration
}

func (o AlignOptions) withDefaults(bs int64) AlignOptions {
	if o.Min <= 0 {
		o.Min = 4 << 10
	}
	if o.Max <= 0 {
		o.Max = MaxSize
	}
	if o.Access <= 0 {
		o.Access = 4 << 10
	}
	o.Access = max(o.Access/bs, 2) * bs
	o.Min = max(o.Min, o.Access)
	if o.Count <= 0 {
		o.Count = 8
	}
	o.Count += o.Count % 2
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Clock == nil {
		start := time.Now()
		o.Clock = func() time.Duration { return time.Since(start) }
	}
	return o
}

// AlignPoint is one candidate boundary: the median time of a read just
// before multiples of it, across them, and just after, and the median of
// how much longer each straddling read took than the two beside it.
// Medians, so one stall of a busy host does not make a boundary.
type AlignPoint struct {
	Boundary int64
	Before   time.Duration
	On       time.Duration
	After    time.Duration
	Diff     time.Duration
	Samples  int
}

// AlignResult is the alignment test (flashbench -a): the points and the
// unit they point to, 0 when the card shows none.
type AlignResult struct {
	Access int64
	Points []AlignPoint
	Unit   int64
}

// Alignment times reads that straddle multiples of each candidate boundary
// against reads just before and just after them. Crossing an erase unit
// costs a card extra work; for a candidate smaller than the unit only some
// of its multiples are unit boundaries (half of them at half the unit), for
// the unit and anything larger all are. So the unit is where the extra time
// reaches its plateau: see Unit.
func Alignment(ctx context.Context, dev blockdev.Device, o AlignOptions) (AlignResult, error) {
	bs := int64(dev.BlockSize())
	capacity := dev.BlockCount() * bs
	o = o.withDefaults(bs)
	res := AlignResult{Access: o.Access}
	buf := aligned.Bytes(int(o.Access))
	timeRead := func(off int64) (time.Duration, error) {
		best := time.Duration(-1)
		for range o.Rounds {
			t0 := o.Clock()
			if err := dev.ReadBlocks(ctx, off/bs, buf); err != nil {
				return 0, fmt.Errorf("alignment read of %d bytes at byte %d: %w", o.Access, off, err)
			}
			if d := o.Clock() - t0; best < 0 || d < best {
				best = d
			}
		}
		return best, nil
	}
	for a := o.Min; a <= o.Max; a *= 2 {
		var before, on, after, diff []time.Duration
		for m := int64(1); m <= int64(o.Count) && m*a+o.Access <= capacity; m++ {
			b := m * a
			var t [3]time.Duration
			for i, off := range []int64{b - o.Access, b - o.Access/2, b} {
				d, err := timeRead(off)
				if err != nil {
					return res, err
				}
				t[i] = d
			}
			before, on, after = append(before, t[0]), append(on, t[1]), append(after, t[2])
			diff = append(diff, t[1]-(t[0]+t[2])/2)
		}
		if len(diff) == 0 {
			break // the card is smaller than this boundary
		}
		res.Points = append(res.Points, AlignPoint{Boundary: a, Before: median(before), On: median(on),
			After: median(after), Diff: median(diff), Samples: len(diff)})
	}
	res.Unit = Unit(res.Points)
	return res, nil
}

// Unit reads the erase unit off the alignment points: the smallest
// boundary showing at least 3/4 of the largest extra time, with every
// larger boundary showing at least half of it (they are all unit
// boundaries too), provided that extra time is real (over a tenth of a
// read and 20 µs) and the smallest boundary shows less than half of it.
// 0 means no unit stands out: the reader hides it, or the card has none.
func Unit(points []AlignPoint) int64 {
	if len(points) < 2 {
		return 0
	}
	var peak time.Duration
	var reads []time.Duration
	for _, p := range points {
		peak = max(peak, p.Diff)
		reads = append(reads, (p.Before+p.After)/2)
	}
	typical := median(reads)
	if peak < 20*time.Microsecond || peak*10 < typical || points[0].Diff*2 >= peak {
		return 0
	}
	unit := int64(0)
	for i := len(points) - 1; i >= 0 && points[i].Diff*2 >= peak; i-- {
		if points[i].Diff*4 >= peak*3 {
			unit = points[i].Boundary
		}
	}
	return unit
}

// median of d (which it sorts). With an even count it is the mean of the
// middle two: at half the unit, half the reads straddle it, and the
// median must say half the cost, not all of it.
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	n := len(d)
	if n%2 == 0 {
		return (d[n/2-1] + d[n/2]) / 2
	}
	return d[n/2]
}
