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
	Command    Command            `json:"command"`
	Target     string             `json:"target"` // the name later messages use
	Capacity   int64              `json:"capacity"`
	BlockSize  int                `json:"block_size"`
	Sizes      []int64            `json:"sizes"`   // transfer sizes, in bytes, in order
	Regions    []cardbench.Region `json:"regions"` // where each size is read
	PointTimeS float64            `json:"point_time_s"`
	Write      bool               `json:"write"`
	Preserve   bool               `json:"preserve"`
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
	Op        string           `json:"op"`
	Size      int64            `json:"size"`
	Region    cardbench.Region `json:"region"`
	Commands  int              `json:"commands"`
	ElapsedS  float64          `json:"elapsed_s"`
	PerSecond float64          `json:"per_second"`
}

type BenchSummary struct {
	Header
	Command                 Command                `json:"command"`
	Target                  string                 `json:"target"`
	Capacity                int64                  `json:"capacity"`
	BlockSize               int                    `json:"block_size"`
	Series                  []cardbench.Series     `json:"series"`
	Points                  []cardbench.Point      `json:"points"`
	Random                  []BenchRandom          `json:"random"`
	RecommendedTransferSize int64                  `json:"recommended_transfer_size"` // 0: nothing to recommend from
	RecommendedFrom         string                 `json:"recommended_from"`
	BestRate                float64                `json:"best_rate"`
	BestSize                int64                  `json:"best_size"`
	Alignment               *cardbench.AlignResult `json:"alignment,omitempty"`  // absent with --skip align
	RoundTrip               *cardbench.RoundTrip   `json:"round_trip,omitempty"` // absent with --skip roundtrip and for file: targets
	Plot                    string                 `json:"plot,omitempty"`       // with --plot
	// Transports is the same pass over Bulk-Only and UAS, for a reader
	// that offers both.
	Transports *cardbench.Transports `json:"transports,omitempty"`

	// Recommendation is the line -q prints.
	Recommendation string `json:"-"`
}

// QuietLine is what a person who asked for quiet still reads.
func (e *BenchSummary) QuietLine() string { return e.Recommendation }
