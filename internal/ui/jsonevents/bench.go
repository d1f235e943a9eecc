package jsonevents

import (
	"github.com/usbflash/usbflash/internal/probe/cardbench"
)

// The JSON events of bench, beside those of events.go: start and summary
// take bench's own shape (the schema's start_bench and summary_bench), as
// does progress, which counts measurements instead of bytes
// (progress_bench); point and restored are bench's alone. note, phase and
// error are the shared ones.

const (
	NamePoint    Name = "point"    // one measurement of a sweep
	NameRestored Name = "restored" // --preserve put the region back and read it back
)

const CommandBench Command = "bench"

// bench's phases: its progress events count the points of a sweep, or one
// step of a measurement that is not a sweep. A kernel sweep (--compare) is
// named by its path, cardbench.PathKernelDirect or PathKernelBuffered.
const (
	PhaseReadSweep   Phase = "read sweep"
	PhaseAlignment   Phase = "alignment"
	PhaseRandomRead  Phase = "random read"
	PhaseSave        Phase = "save"
	PhaseWriteSweep  Phase = "write sweep"
	PhaseRandomWrite Phase = "random write"
	PhaseRestore     Phase = "restore"
)

// UnitPoints is what bench's progress counts, for the text reporter.
const UnitPoints = "points"

type BenchStart struct {
	Header
	Command    Command       `json:"command"`
	Target     string        `json:"target"` // the name later messages use
	Capacity   int64         `json:"capacity"`
	BlockSize  int           `json:"block_size"`
	Sizes      []int64       `json:"sizes"`   // transfer sizes, in bytes, in order
	Regions    []BenchRegion `json:"regions"` // where each size is read
	PointTimeS float64       `json:"point_time_s"`
	Write      bool          `json:"write"`
	Preserve   bool          `json:"preserve"`
	// Compare is the kernel's disk --compare reads first: capacity,
	// block_size, sizes and regions are then its own.
	Compare string `json:"compare,omitempty"`
}

type BenchPoint struct {
	Header
	Path     string  `json:"path"` // direct, or a kernel path with --compare
	Op       string  `json:"op"`
	Size     int64   `json:"size"`
	Region   string  `json:"region"`
	Bytes    int64   `json:"bytes"`
	Commands int     `json:"commands"`
	ElapsedS float64 `json:"elapsed_s"`
	Rate     float64 `json:"rate"` // bytes per second
	// Cost is what the point cost the process and the device (as a
	// write's summary says it); absent where neither is counted.
	Cost *Cost `json:"cost,omitempty"`
}

func NewBenchPoint(p cardbench.Point) *BenchPoint {
	return &BenchPoint{Header{}, p.Path, p.Op, p.Size, p.Region,
		p.Bytes, p.Commands, p.Elapsed.Seconds(), p.Rate(), CostOf(p.Usage, p.IO)}
}

type BenchRestored struct {
	Header
	Offset   int64 `json:"offset"`
	Length   int64 `json:"length"`
	Verified bool  `json:"verified"`
}

// BenchRandom is one run of random operations in the summary.
type BenchRandom struct {
	Op        string      `json:"op"`
	Size      int64       `json:"size"`
	Region    BenchRegion `json:"region"`
	Commands  int         `json:"commands"`
	ElapsedS  float64     `json:"elapsed_s"`
	PerSecond float64     `json:"per_second"`
}

type BenchSummary struct {
	Header
	Command                 Command         `json:"command"`
	Target                  string          `json:"target"`
	Capacity                int64           `json:"capacity"`
	BlockSize               int             `json:"block_size"`
	Series                  []BenchSeries   `json:"series"`
	Points                  []BenchMeasure  `json:"points"`
	Random                  []BenchRandom   `json:"random"`
	RecommendedTransferSize int64           `json:"recommended_transfer_size"` // 0: nothing to recommend from
	RecommendedFrom         string          `json:"recommended_from"`
	BestRate                float64         `json:"best_rate"`
	BestSize                int64           `json:"best_size"`
	Alignment               *BenchAlignment `json:"alignment,omitempty"`  // absent with --skip align
	RoundTrip               *BenchRoundTrip `json:"round_trip,omitempty"` // absent with --skip roundtrip and for file: targets
	Plot                    string          `json:"plot,omitempty"`       // with --plot
	// Transports is the same pass over Bulk-Only and UAS, for a reader
	// that offers both.
	Transports *BenchTransports `json:"transports,omitempty"`

	// Recommendation is the line -q prints.
	Recommendation string `json:"-"`
}

// QuietLine is what a person who asked for quiet still reads.
func (e *BenchSummary) QuietLine() string { return e.Recommendation }

// BenchRegion is a byte range of the card (cardbench.Region).
type BenchRegion struct {
	Name   string `json:"name"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

// NewBenchRegions is regions as the events give them.
func NewBenchRegions(regions []cardbench.Region) []BenchRegion {
	return mapSlice(regions, newBenchRegion)
}

func newBenchRegion(r cardbench.Region) BenchRegion {
	return BenchRegion{Name: r.Name, Offset: r.Offset, Length: r.Length}
}

// BenchMeasure is one point of the summary (cardbench.Point): as the
// point event, with its time in nanoseconds.
type BenchMeasure struct {
	Path      string `json:"path"`
	Op        string `json:"op"`
	Size      int64  `json:"size"`
	Region    string `json:"region"`
	Bytes     int64  `json:"bytes"`
	Commands  int    `json:"commands"`
	ElapsedNS int64  `json:"elapsed_ns"`
}

// BenchRate is one size's throughput of a curve (cardbench.Rate).
type BenchRate struct {
	Path     string  `json:"path"`
	Op       string  `json:"op"`
	Size     int64   `json:"size"`
	Rate     float64 `json:"rate"` // bytes per second
	Bytes    int64   `json:"bytes"`
	ElapsedS float64 `json:"elapsed_s"`
}

// BenchSeries is the curve of one path and operation (cardbench.Series).
type BenchSeries struct {
	Path  string      `json:"path"`
	Op    string      `json:"op"`
	Rates []BenchRate `json:"rates"`
}

// BenchAlignment is the alignment test (cardbench.AlignResult).
type BenchAlignment struct {
	Access int64             `json:"access"`
	Points []BenchAlignPoint `json:"points"`
	Unit   int64             `json:"unit"`
}

// BenchAlignPoint is one candidate boundary's medians (cardbench.AlignPoint).
type BenchAlignPoint struct {
	Boundary int64 `json:"boundary"`
	BeforeNS int64 `json:"before_ns"`
	OnNS     int64 `json:"on_ns"`
	AfterNS  int64 `json:"after_ns"`
	DiffNS   int64 `json:"diff_ns"`
	Samples  int   `json:"samples"`
}

// BenchRoundTrip is the time of one data-less command (cardbench.RoundTrip).
type BenchRoundTrip struct {
	Commands int   `json:"commands"`
	MinNS    int64 `json:"min_ns"`
	MedianNS int64 `json:"median_ns"`
	MaxNS    int64 `json:"max_ns"`
}

// BenchTransports compares a reader's two transports (cardbench.Transports).
type BenchTransports struct {
	Rates  []BenchTransportRate `json:"rates"`
	Faster string               `json:"faster"`
	Op     string               `json:"op"`
	Ratio  float64              `json:"ratio"`
}

// BenchTransportRate is one transport's pass (cardbench.TransportRate).
type BenchTransportRate struct {
	Transport string      `json:"transport"` // BOT or UAS
	Op        string      `json:"op"`
	Size      int64       `json:"size"`
	Region    BenchRegion `json:"region"`
	Bytes     int64       `json:"bytes"`
	ElapsedS  float64     `json:"elapsed_s"`
	Rate      float64     `json:"rate"` // bytes per second
}

// NewBenchSummary is the summary event of a run: its measurements in the
// events' shapes, and random its random operations (an empty list, not
// null, when none were measured); the caller adds the recommendation.
func NewBenchSummary(run *cardbench.Report, series []cardbench.Series) *BenchSummary {
	random := []BenchRandom{}
	for _, r := range run.Random {
		random = append(random, BenchRandom{Op: r.Op, Size: r.Size, Region: newBenchRegion(r.Region), Commands: r.Commands,
			ElapsedS: r.Elapsed.Seconds(), PerSecond: r.PerSecond()})
	}
	s := &BenchSummary{Command: CommandBench, Target: run.Target, Capacity: run.Capacity, BlockSize: run.BlockSize,
		Series: mapSlice(series, func(s cardbench.Series) BenchSeries {
			return BenchSeries{Path: s.Path, Op: s.Op, Rates: mapSlice(s.Rates, func(r cardbench.Rate) BenchRate {
				return BenchRate{Path: r.Path, Op: r.Op, Size: r.Size, Rate: r.Rate, Bytes: r.Bytes, ElapsedS: r.Elapsed}
			})}
		}),
		Points: mapSlice(run.Points, func(p cardbench.Point) BenchMeasure {
			return BenchMeasure{Path: p.Path, Op: p.Op, Size: p.Size, Region: p.Region, Bytes: p.Bytes, Commands: p.Commands, ElapsedNS: p.Elapsed.Nanoseconds()}
		}),
		Random: random,
	}
	if a := run.Align; a != nil {
		s.Alignment = &BenchAlignment{Access: a.Access, Unit: a.Unit, Points: mapSlice(a.Points, func(p cardbench.AlignPoint) BenchAlignPoint {
			return BenchAlignPoint{Boundary: p.Boundary, BeforeNS: p.Before.Nanoseconds(), OnNS: p.On.Nanoseconds(),
				AfterNS: p.After.Nanoseconds(), DiffNS: p.Diff.Nanoseconds(), Samples: p.Samples}
		})}
	}
	if r := run.RoundTrip; r != nil {
		s.RoundTrip = &BenchRoundTrip{Commands: r.Commands, MinNS: r.Min.Nanoseconds(), MedianNS: r.Median.Nanoseconds(), MaxNS: r.Max.Nanoseconds()}
	}
	if t := run.Transports; t != nil {
		s.Transports = &BenchTransports{Faster: t.Faster, Op: t.Op, Ratio: t.Ratio, Rates: mapSlice(t.Rates, func(r cardbench.TransportRate) BenchTransportRate {
			return BenchTransportRate{Transport: r.Transport, Op: r.Op, Size: r.Size, Region: newBenchRegion(r.Region), Bytes: r.Bytes, ElapsedS: r.ElapsedS, Rate: r.Rate}
		})}
	}
	return s
}

// mapSlice is f of each of in, nil for nil (null in JSON, as the
// library's own slice would be).
func mapSlice[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
