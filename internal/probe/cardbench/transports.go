package cardbench

import (
	"context"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/usbms"
)

// StepTransports is the measurement of a reader that offers Bulk-Only and
// UAS: the same sequential pass on each.
const StepTransports = "transports"

// TransportRate is one transport's sequential pass: transfers of Size
// bytes, one after another, over Region.
type TransportRate struct {
	Transport string // BOT or UAS
	Op        string
	Size      int64
	Region    Region
	Bytes     int64
	ElapsedS  float64
	Rate      float64 // bytes per second
}

// Transports is the comparison of a reader's two transports: a row per
// transport and operation, and the faster one.
type Transports struct {
	Rates []TransportRate
	// Faster is the transport of the better rate, of the writes when they
	// were measured (writing is what the reader is for), else of the reads;
	// Ratio is its rate over the other's.
	Faster string
	Op     string
	Ratio  float64
}

// offersBoth says whether d is a reader that offers Bulk-Only and UAS.
func offersBoth(d *drive.Device) bool {
	s, ok := d.Dev.(drive.SCSI)
	return ok && s.SCSI().Transport().Both
}

// compareTransports opens the target once with each transport and runs
// the same pass on each: reads of the largest size over the first read
// region, and with writes (without Preserve: what was saved was put back
// before) writes of that size over the write region. The reader must be
// closed by the caller first: it can be claimed once.
func (s *session) compareTransports(ctx context.Context, l Layout) (*Transports, error) {
	c := s.cfg
	size := last(l.Sizes)
	writes := c.Write && !c.Plan.Preserve
	total := 2
	if writes {
		total = 4
	}
	s.emit(StepStarted{Step: StepTransports, Total: total})
	out := &Transports{}
	done := 0
	for _, tr := range []string{usbms.TransportBOT, usbms.TransportUAS} {
		d, err := drive.Open(ctx, c.Target, drive.Options{Force: c.Force, ReadOnly: !writes, Readers: c.Readers.WithTransport(tr),
			OnNotice: func(_ string, n observe.Notice) { s.emit(Note{Message: n.Text, Notice: &n}) }})
		if err != nil {
			return out, err
		}
		type pass struct {
			op string
			r  Region
		}
		passes := []pass{{OpRead, l.Regions[0]}}
		if writes {
			passes = append(passes, pass{OpWrite, *c.Plan.Region})
		}
		for _, p := range passes {
			pts, err := Sweep(ctx, d.Dev, SweepOptions{Path: PathDirect, Op: p.op, Sizes: []int64{size}, Regions: []Region{p.r}, PointTime: c.PointTime})
			if err != nil {
				d.Close()
				return out, err
			}
			for _, pt := range pts {
				out.Rates = append(out.Rates, TransportRate{Transport: d.Dev.(drive.SCSI).SCSI().Transport().Protocol, Op: pt.Op, Size: pt.Size,
					Region: p.r, Bytes: pt.Bytes, ElapsedS: pt.Elapsed.Seconds(), Rate: pt.Rate()})
			}
			done++
			s.emit(Progress{Step: StepTransports, Done: int64(done), Total: int64(total), Elapsed: time.Since(s.start)})
		}
		if err := d.Close(); err != nil {
			return out, err
		}
	}
	out.pick()
	return out, nil
}

// pick sets Faster, Op and Ratio from the rates.
func (t *Transports) pick() {
	op := OpRead
	for _, r := range t.Rates {
		if r.Op == OpWrite {
			op = OpWrite
		}
	}
	var best, other TransportRate
	for _, r := range t.Rates {
		if r.Op != op {
			continue
		}
		switch {
		case r.Rate > best.Rate:
			best, other = r, best
		case r.Rate > other.Rate || other.Transport == "":
			other = r
		}
	}
	if best.Rate <= 0 || other.Rate <= 0 {
		return
	}
	t.Faster, t.Op, t.Ratio = best.Transport, op, best.Rate/other.Rate
}
