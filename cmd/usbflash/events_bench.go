package main

import (
	"github.com/usbflash/usbflash/cardbench"
)

// The JSON events of bench, beside those of events.go: start and summary
// take bench's own shape (the schema's start_bench and summary_bench), as
// does progress, which counts measurements instead of bytes
// (progress_bench); point and restored are bench's alone. note, phase and
// error are the shared ones.

const (
	evPoint    eventName = "point"    // one measurement of a sweep
	evRestored eventName = "restored" // --preserve put the region back and read it back
)

const cmdBench command = "bench"

// bench's phases: its progress events count the points of a sweep, or one
// step of a measurement that is not a sweep. A kernel sweep (--compare) is
// named by its path, cardbench.PathKernelDirect or PathKernelBuffered.
const (
	phaseReadSweep   phase = "read sweep"
	phaseAlignment   phase = "alignment"
	phaseRandomRead  phase = "random read"
	phaseSave        phase = "save"
	phaseWriteSweep  phase = "write sweep"
	phaseRandomWrite phase = "random write"
	phaseRestore     phase = "restore"
)

// benchUnit is what bench's progress counts, for the text reporter.
const benchUnit = "points"

type benchStartEvent struct {
	eventHeader
	Command    command            `json:"command"`
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

type benchPointEvent struct {
	eventHeader
	Path     string  `json:"path"` // direct, or a kernel path with --compare
	Op       string  `json:"op"`
	Size     int64   `json:"size"`
	Region   string  `json:"region"`
	Bytes    int64   `json:"bytes"`
	Commands int     `json:"commands"`
	ElapsedS float64 `json:"elapsed_s"`
	Rate     float64 `json:"rate"` // bytes per second
}

func newBenchPointEvent(p cardbench.Point) *benchPointEvent {
	return &benchPointEvent{eventHeader{Event: evPoint}, p.Path, p.Op, p.Size, p.Region,
		p.Bytes, p.Commands, p.Elapsed.Seconds(), p.Rate()}
}

type benchRestoredEvent struct {
	eventHeader
	Offset   int64 `json:"offset"`
	Length   int64 `json:"length"`
	Verified bool  `json:"verified"`
}

// benchRandom is one run of random operations in the summary.
type benchRandom struct {
	Op        string           `json:"op"`
	Size      int64            `json:"size"`
	Region    cardbench.Region `json:"region"`
	Commands  int              `json:"commands"`
	ElapsedS  float64          `json:"elapsed_s"`
	PerSecond float64          `json:"per_second"`
}

type benchSummaryEvent struct {
	eventHeader
	Command                 command                `json:"command"`
	Target                  string                 `json:"target"`
	Capacity                int64                  `json:"capacity"`
	BlockSize               int                    `json:"block_size"`
	Series                  []cardbench.Series     `json:"series"`
	Points                  []cardbench.Point      `json:"points"`
	Random                  []benchRandom          `json:"random"`
	RecommendedTransferSize int64                  `json:"recommended_transfer_size"` // 0: nothing to recommend from
	RecommendedFrom         string                 `json:"recommended_from"`
	BestRate                float64                `json:"best_rate"`
	BestSize                int64                  `json:"best_size"`
	Alignment               *cardbench.AlignResult `json:"alignment,omitempty"`  // absent with --skip align
	RoundTrip               *cardbench.RoundTrip   `json:"round_trip,omitempty"` // absent with --skip roundtrip and for file: targets
	Plot                    string                 `json:"plot,omitempty"`       // with --plot

	recommendation string // the line -q prints
}

func (e *benchSummaryEvent) quietLine() string { return e.recommendation }
