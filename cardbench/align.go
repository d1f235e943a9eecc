package cardbench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"usbflash/internal/aligned"
	"usbflash/pipeline"
)

// AlignOptions configure Alignment. Zero values take the defaults.
type AlignOptions struct {
	Min, Max int64 // candidate boundaries, powers of two (4 KiB, 32 MiB)
	Access   int64 // bytes per read (4 KiB, at least two blocks)
	Count    int   // boundaries tried per candidate (8, even)
	Rounds   int   // each read is repeated, the fastest counts (3)
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
	return o
}

// AlignPoint is one candidate boundary: the mean time of a read just
// before multiples of it, across them, and just after, and how much longer
// the straddling read took than the two beside it.
type AlignPoint struct {
	Boundary int64         `json:"boundary"`
	Before   time.Duration `json:"before_ns"`
	On       time.Duration `json:"on_ns"`
	After    time.Duration `json:"after_ns"`
	Diff     time.Duration `json:"diff_ns"`
	Samples  int           `json:"samples"`
}

// AlignResult is the alignment test (flashbench -a): the points and the
// unit they point to, 0 when the card shows none.
type AlignResult struct {
	Access int64        `json:"access"`
	Points []AlignPoint `json:"points"`
	Unit   int64        `json:"unit"`
}

// Alignment times reads that straddle multiples of each candidate boundary
// against reads just before and just after them. Crossing an erase unit
// costs a card extra work; for a candidate smaller than the unit only some
// of its multiples are unit boundaries (half of them at half the unit), for
// the unit and anything larger all are. So the unit is where the extra time
// reaches its plateau: see Unit.
func Alignment(ctx context.Context, dev pipeline.BlockDevice, o AlignOptions) (AlignResult, error) {
	bs := int64(dev.BlockSize())
	capacity := dev.BlockCount() * bs
	o = o.withDefaults(bs)
	res := AlignResult{Access: o.Access}
	buf := aligned.Bytes(int(o.Access))
	timeRead := func(off int64) (time.Duration, error) {
		best := time.Duration(-1)
		for range o.Rounds {
			t0 := time.Now()
			if err := dev.ReadBlocks(ctx, off/bs, buf); err != nil {
				return 0, fmt.Errorf("alignment read of %d bytes at byte %d: %w", o.Access, off, err)
			}
			if d := time.Since(t0); best < 0 || d < best {
				best = d
			}
		}
		return best, nil
	}
	for a := o.Min; a <= o.Max; a *= 2 {
		var p AlignPoint
		p.Boundary = a
		for m := int64(1); m <= int64(o.Count) && m*a+o.Access <= capacity; m++ {
			b := m * a
			before, err := timeRead(b - o.Access)
			if err != nil {
				return res, err
			}
			on, err := timeRead(b - o.Access/2)
			if err != nil {
				return res, err
			}
			after, err := timeRead(b)
			if err != nil {
				return res, err
			}
			p.Before += before
			p.On += on
			p.After += after
			p.Samples++
		}
		if p.Samples == 0 {
			break // the card is smaller than this boundary
		}
		n := time.Duration(p.Samples)
		p.Before, p.On, p.After = p.Before/n, p.On/n, p.After/n
		p.Diff = p.On - (p.Before+p.After)/2
		res.Points = append(res.Points, p)
	}
	res.Unit = Unit(res.Points)
	return res, nil
}

// Unit reads the erase unit off the alignment points: the smallest
// boundary from which every larger one shows at least 3/4 of the largest
// extra time, provided that extra time is real (over a tenth of a read and
// 20 µs) and the smallest boundary shows less than half of it. 0 means no
// unit stands out: the reader hides it, or the card has none.
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
	slices.Sort(reads)
	typical := reads[len(reads)/2]
	if peak < 20*time.Microsecond || peak*10 < typical || points[0].Diff*2 >= peak {
		return 0
	}
	unit := int64(0)
	for i := len(points) - 1; i >= 0 && points[i].Diff*4 >= peak*3; i-- {
		unit = points[i].Boundary
	}
	return unit
}
