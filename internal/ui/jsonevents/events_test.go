package jsonevents

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/pipeline"
)

// TestProgressRateWaitsForTheFirstSecond: no rate before a phase has run
// a second (the first buffers fill from memory), the average after.
func TestProgressRateWaitsForTheFirstSecond(t *testing.T) {
	for _, tt := range []struct {
		done    int64
		elapsed time.Duration
		want    float64 // 0: none
	}{
		{1 << 20, 300 * time.Millisecond, 0},
		{0, 2 * time.Second, 0},
		{40 << 20, 1500 * time.Millisecond, float64(40<<20) / 1.5},
	} {
		p := NewProgress(PhaseWrite, tt.done, -1, tt.elapsed)
		switch {
		case tt.want == 0 && p.Rate != nil:
			t.Errorf("%d bytes in %v: rate %v, want none yet", tt.done, tt.elapsed, *p.Rate)
		case tt.want != 0 && (p.Rate == nil || *p.Rate != tt.want):
			t.Errorf("%d bytes in %v: rate %v, want %v", tt.done, tt.elapsed, p.Rate, tt.want)
		}
	}
}

// TestBoundOf: the side the engine measured as the limit, and none when
// it measured none.
func TestBoundOf(t *testing.T) {
	for in, want := range map[pipeline.Bound]Bound{
		pipeline.BoundDecoder: BoundDecoder, pipeline.BoundDevice: BoundDevice, pipeline.BoundSink: BoundSink, "": BoundNone,
	} {
		if got := BoundOf(in); got != want {
			t.Errorf("BoundOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBenchSummaryShape: a bench run's measurements in the summary's
// shape, byte for byte: durations in nanoseconds where the schema says
// _ns, random an empty list when none were measured, what was not
// measured null or absent.
func TestBenchSummaryShape(t *testing.T) {
	region := cardbench.Region{Name: "start", Offset: 0, Length: 1 << 20}
	run := &cardbench.Report{Target: "sim:c.img", Capacity: 8 << 20, BlockSize: 512, Result: &cardbench.Result{
		Points: []cardbench.Point{{Path: "direct", Op: "read", Size: 4096, Region: "start", Bytes: 8192, Commands: 2, Elapsed: 3 * time.Millisecond}},
		Align:  &cardbench.AlignResult{Access: 4096, Unit: 1 << 22, Points: []cardbench.AlignPoint{{Boundary: 8192, Before: 1, On: 2, After: 3, Diff: 4, Samples: 5}}},
		Transports: &cardbench.Transports{Faster: "UAS", Op: "read", Ratio: 1.5,
			Rates: []cardbench.TransportRate{{Transport: "UAS", Op: "read", Size: 1 << 20, Region: region, Bytes: 1 << 20, ElapsedS: 0.5, Rate: 2 << 20}}},
	}}
	series := []cardbench.Series{{Path: "direct", Op: "read", Rates: []cardbench.Rate{{Path: "direct", Op: "read", Size: 4096, Rate: 1e6, Bytes: 8192, Elapsed: 0.003}}}}
	got, err := json.Marshal(NewBenchSummary(run, series))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event":"","time":"","command":"bench","target":"sim:c.img","capacity":8388608,"block_size":512,` +
		`"series":[{"path":"direct","op":"read","rates":[{"path":"direct","op":"read","size":4096,"rate":1000000,"bytes":8192,"elapsed_s":0.003}]}],` +
		`"points":[{"path":"direct","op":"read","size":4096,"region":"start","bytes":8192,"commands":2,"elapsed_ns":3000000}],"random":[],` +
		`"recommended_transfer_size":0,"recommended_from":"","best_rate":0,"best_size":0,` +
		`"alignment":{"access":4096,"points":[{"boundary":8192,"before_ns":1,"on_ns":2,"after_ns":3,"diff_ns":4,"samples":5}],"unit":4194304},` +
		`"transports":{"rates":[{"transport":"UAS","op":"read","size":1048576,"region":{"name":"start","offset":0,"length":1048576},"bytes":1048576,"elapsed_s":0.5,"rate":2097152}],"faster":"UAS","op":"read","ratio":1.5}}`
	if string(got) != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}
	if regions, _ := json.Marshal(NewBenchRegions([]cardbench.Region{region})); string(regions) != `[{"name":"start","offset":0,"length":1048576}]` {
		t.Errorf("regions %s", regions)
	}
}
