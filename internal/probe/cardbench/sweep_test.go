package cardbench

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/usbflash/usbflash/usbms/sim"
)

const cardSize = 64 << 20

// The speed models leave no size near the 2% line, so neither timing noise
// nor the host's own cost per command (tens of ms on a busy machine under
// the race detector; it would take 200 ms to change the answer) can move
// the recommendation. Reads: a smaller read costs a whole 4 MiB page,
// a larger one straddles a 4 MiB erase unit, so the best size is neither
// the smallest nor the largest. Writes: part of a 2 MiB unit pays a merge.
func TestSweepRecommendsWhatTheModelImplies(t *testing.T) {
	tests := []struct {
		name  string
		cfg   sim.Config
		op    string
		sizes []int64
		want  int64
	}{
		{"read, pages", sim.Config{Speed: 40e6, Page: 4 << 20, AllocationUnit: 4 << 20, AUCost: 200 * time.Millisecond},
			OpRead, []int64{1 << 20, 2 << 20, 4 << 20, 8 << 20}, 4 << 20},
		{"write, erase unit", sim.Config{Speed: 40e6, WriteSpeed: 20e6, AllocationUnit: 2 << 20, AUCost: 40 * time.Millisecond},
			OpWrite, []int64{512 << 10, 1 << 20, 2 << 20}, 2 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newSimCard(t, tt.cfg, cardSize)
			region := Region{Name: "stated", Offset: 16 << 20, Length: 16 << 20}
			before := c.hash(t, 0, cardSize)
			head, tail := c.hash(t, 0, region.Offset), c.hash(t, region.End(), cardSize-region.End())
			points, err := Sweep(context.Background(), c.lun, SweepOptions{
				Path: PathDirect, Op: tt.op, Sizes: tt.sizes,
				Regions: []Region{region}, PointTime: 150 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			s := Summarize(points)
			if len(s) != 1 || len(s[0].Rates) != len(tt.sizes) {
				t.Fatalf("Summarize = %+v, want one series of %d sizes", s, len(tt.sizes))
			}
			if got, _ := Recommend(s[0]); got != tt.want {
				t.Errorf("recommended %d bytes, want %d; rates %+v", got, tt.want, s[0].Rates)
			}
			after := c.hash(t, 0, cardSize)
			if tt.op == OpRead && after != before {
				t.Error("a read sweep changed the card")
			}
			if tt.op == OpWrite {
				st := c.dev.Stats().LUNs[0]
				if st.WrittenFirst < region.Offset/512 || st.WrittenEnd > region.End()/512 || st.BlocksWritten == 0 {
					t.Errorf("writes reached blocks [%d, %d), want inside [%d, %d)", st.WrittenFirst, st.WrittenEnd, region.Offset/512, region.End()/512)
				}
				if c.hash(t, 0, region.Offset) != head || c.hash(t, region.End(), cardSize-region.End()) != tail {
					t.Error("the write sweep changed the card outside its region")
				}
			}
		})
	}
}

func TestSweepReadsEveryRegion(t *testing.T) {
	c := newSimCard(t, sim.Config{}, cardSize)
	regions := ReadRegions(cardSize, 8<<20, 4<<20)
	want := []Region{{Name: "start", Offset: 0, Length: 8 << 20}, {Name: "middle", Offset: 28 << 20, Length: 8 << 20}, {Name: "end", Offset: 56 << 20, Length: 8 << 20}}
	if !slices.Equal(regions, want) {
		t.Fatalf("ReadRegions = %+v, want %+v", regions, want)
	}
	var progress []int
	points, err := Sweep(context.Background(), c.lun, SweepOptions{
		Path: PathDirect, Op: OpRead, Sizes: []int64{4 << 20, 16 << 20}, Regions: regions, PointTime: time.Hour,
		Progress: func(done, total int) { progress = append(progress, done*10+total) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// 4 MiB: each region read whole (two commands), then the end stops the
	// point; 16 MiB does not fit an 8 MiB region and is skipped.
	if len(points) != 3 {
		t.Fatalf("%d points, want 3: %+v", len(points), points)
	}
	for i, p := range points {
		if p.Region != want[i].Name || p.Commands != 2 || p.Bytes != 8<<20 {
			t.Errorf("point %d = %+v, want 2 commands, 8 MiB in %s", i, p, want[i].Name)
		}
		// What the point cost, as the reader counted it: its READs,
		// and at the card's end the last 8 blocks one per command (as
		// Linux reads a USB disk's last sectors), 8 more.
		wantCmds := int64(p.Commands)
		if p.Region == "end" {
			wantCmds += 8
		}
		if p.IO.Commands != wantCmds {
			t.Errorf("point %d (%s): the reader counted %d commands, want %d", i, p.Region, p.IO.Commands, wantCmds)
		}
	}
	if got := c.dev.Stats().LUNs[0].BlocksRead; got < 3*(8<<20)/512 {
		t.Errorf("read %d blocks, want at least the three regions", got)
	}
	if len(progress) != 3 || progress[2] != 36 {
		t.Errorf("progress %v, want 3 calls ending 3 of 6", progress)
	}
}

func TestReadRegions(t *testing.T) {
	const MiB = 1 << 20
	tests := []struct {
		capacity, length int64
		want             []Region
	}{
		{1 << 40, 0, []Region{{Name: "start", Offset: 0, Length: 256 * MiB}, {Name: "middle", Offset: (1<<39 - 128*MiB), Length: 256 * MiB}, {Name: "end", Offset: 1<<40 - 256*MiB, Length: 256 * MiB}}},
		{192 * MiB, 0, []Region{{Name: "start", Offset: 0, Length: 64 * MiB}, {Name: "middle", Offset: 64 * MiB, Length: 64 * MiB}, {Name: "end", Offset: 128 * MiB, Length: 64 * MiB}}},
		{130 * MiB, 0, []Region{{Name: "start", Offset: 0, Length: 40 * MiB}, {Name: "middle", Offset: 44 * MiB, Length: 40 * MiB}, {Name: "end", Offset: 88 * MiB, Length: 40 * MiB}}},
		// Too small for three disjoint regions of the largest transfer.
		{64 * MiB, 0, []Region{{Name: "start", Offset: 0, Length: 32 * MiB}, {Name: "middle", Offset: 16 * MiB, Length: 32 * MiB}, {Name: "end", Offset: 32 * MiB, Length: 32 * MiB}}},
		{16 * MiB, 0, []Region{{Name: "start", Offset: 0, Length: 16 * MiB}, {Name: "middle", Offset: 0, Length: 16 * MiB}, {Name: "end", Offset: 0, Length: 16 * MiB}}},
		{2 * MiB, 0, []Region{{Name: "start", Offset: 0, Length: 2 * MiB}, {Name: "middle", Offset: 0, Length: 2 * MiB}, {Name: "end", Offset: 0, Length: 2 * MiB}}},
	}
	for _, tt := range tests {
		if got := ReadRegions(tt.capacity, tt.length, RegionAlign); !slices.Equal(got, tt.want) {
			t.Errorf("ReadRegions(%d MiB) = %+v, want %+v", tt.capacity/MiB, got, tt.want)
		}
	}
}

func TestRandom(t *testing.T) {
	tests := []struct {
		op string
	}{{OpRead}, {OpWrite}}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			c := newSimCard(t, sim.Config{}, cardSize)
			region := Region{Name: "stated", Offset: 1<<20 + 512, Length: 1 << 20}
			before := c.hash(t, 0, cardSize)
			res, err := Random(context.Background(), c.lun, tt.op, region, RandomSize, 20*time.Millisecond, 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Commands == 0 || res.PerSecond() <= 0 {
				t.Fatalf("Random = %+v, want commands and a rate", res)
			}
			st := c.dev.Stats().LUNs[0]
			if tt.op == OpRead {
				if c.hash(t, 0, cardSize) != before {
					t.Error("random reads changed the card")
				}
				return
			}
			// 4 KiB aligned inside the region: the first slot starts at
			// the next 4 KiB boundary, the last ends at or before its end.
			if st.WrittenFirst < (1<<20+4096)/512 || st.WrittenEnd > region.End()/512 {
				t.Errorf("random writes reached blocks [%d, %d), want inside [%d, %d)", st.WrittenFirst, st.WrittenEnd, (1<<20+4096)/512, region.End()/512)
			}
		})
	}
}

func TestRandomRegionTooSmall(t *testing.T) {
	c := newSimCard(t, sim.Config{}, cardSize)
	if _, err := Random(context.Background(), c.lun, OpRead, Region{Name: "tiny", Length: 2048}, RandomSize, time.Millisecond, 1); err == nil {
		t.Error("Random in a region smaller than one transfer succeeded")
	}
}

func TestMeasureRoundTrip(t *testing.T) {
	c := newSimCard(t, sim.Config{}, cardSize)
	before := c.dev.Stats().Opcodes[0x00]
	rt, err := MeasureRoundTrip(context.Background(), c.lun, 25, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.dev.Stats().Opcodes[0x00] - before; rt.Commands != 25 || got != 25 {
		t.Errorf("%d round trips measured, device saw %d TEST UNIT READY; want 25", rt.Commands, got)
	}
	if rt.Min > rt.Median || rt.Median > rt.Max {
		t.Errorf("round trip min %v median %v max %v out of order", rt.Min, rt.Median, rt.Max)
	}
}

func TestAlignmentFindsTheUnit(t *testing.T) {
	tests := []struct {
		name string
		cfg  sim.Config
		want int64
	}{
		{"1 MiB unit", sim.Config{Speed: 40e6, Latency: 200 * time.Microsecond, AllocationUnit: 1 << 20, AUCost: 2 * time.Millisecond}, 1 << 20},
		{"4 MiB unit", sim.Config{Speed: 40e6, Latency: 200 * time.Microsecond, AllocationUnit: 4 << 20, AUCost: 2 * time.Millisecond}, 4 << 20},
		{"no unit", sim.Config{Speed: 40e6, Latency: time.Millisecond}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Timed on the modelled clock: each read costs what the speed
			// model says, however loaded the host is.
			tt.cfg.VirtualClock = true
			c := newSimCard(t, tt.cfg, cardSize)
			before := c.hash(t, 0, cardSize)
			res, err := Alignment(context.Background(), c.lun, AlignOptions{Max: 16 << 20,
				Clock: func() time.Duration { return c.dev.Stats().ModelTime }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Unit != tt.want {
				t.Errorf("unit %d, want %d; points %+v", res.Unit, tt.want, res.Points)
			}
			if len(res.Points) != 13 { // 4 KiB .. 16 MiB
				t.Errorf("%d points, want 13", len(res.Points))
			}
			// From the unit up every multiple is a unit boundary: each
			// straddling read pays the unit's cost, exactly.
			for _, p := range res.Points {
				if tt.want > 0 && p.Boundary >= tt.want && p.Diff != tt.cfg.AUCost {
					t.Errorf("boundary %d: extra time %v, want %v", p.Boundary, p.Diff, tt.cfg.AUCost)
				}
			}
			if c.hash(t, 0, cardSize) != before {
				t.Error("the alignment test changed the card")
			}
		})
	}
}
