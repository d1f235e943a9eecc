package sim

import (
	"testing"
	"time"
)

func TestCommandCost(t *testing.T) {
	const au = 4 << 20
	base := Config{LUNs: []LUN{{Blocks: 1 << 20}}, Speed: 1 << 20, AllocationUnit: au, AUCost: time.Millisecond}
	paged := base
	paged.AllocationUnit, paged.Page = 0, 16<<10
	slowWrites := paged
	slowWrites.WriteSpeed = 1 << 19
	tests := []struct {
		name string
		cfg  Config
		dir  dir
		off  int64
		n    int64
		want time.Duration
	}{
		{"read inside a unit", base, dirIn, 4096, 64 << 10, 0},
		{"read ending on a boundary", base, dirIn, au - 4096, 4096, 0},
		{"read straddling one boundary", base, dirIn, au - 4096, 8192, time.Millisecond},
		{"read straddling two boundaries", base, dirIn, au - 512, au + 1024, 2 * time.Millisecond},
		{"write of a whole unit", base, dirOut, au, au, 0},
		{"write of two whole units", base, dirOut, 0, 2 * au, 0},
		{"write of part of a unit", base, dirOut, au, 1 << 20, time.Millisecond},
		{"write inside a unit, unaligned", base, dirOut, 4096, 4096, time.Millisecond},
		{"write covering two units in part", base, dirOut, au - 4096, 8192, 2 * time.Millisecond},
		{"write: one whole unit and part of the next", base, dirOut, 0, au + 4096, time.Millisecond},
		{"read of whole pages", paged, dirIn, 0, 32 << 10, 0},
		{"read of part of a page pays the page", paged, dirIn, 0, 4096, time.Duration(float64(12<<10) / (1 << 20) * float64(time.Second))},
		{"write pays the page at the write speed", slowWrites, dirOut, 0, 4096, time.Duration(float64(12<<10) / (1 << 19) * float64(time.Second))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := d.commandCost(plan{dir: tt.dir, lun: d.luns[0], off: tt.off, n: tt.n})
			if got != tt.want {
				t.Errorf("commandCost(off %d, n %d) = %v, want %v", tt.off, tt.n, got, tt.want)
			}
		})
	}
}

func TestSpeedOptions(t *testing.T) {
	tests := []struct {
		spec    string
		want    options
		wantErr bool
	}{
		{spec: "c.img?write-speed=10MB/s&page=16KiB", want: options{writeSpeed: 10e6, page: 16 << 10}},
		{spec: "c.img?au=4MiB", want: options{au: 4 << 20, auCost: defaultAUCost}},
		{spec: "c.img?au=4MiB&au-cost=5ms", want: options{au: 4 << 20, auCost: 5 * time.Millisecond}},
		{spec: "c.img?au-cost=5ms&au=8MiB", want: options{au: 8 << 20, auCost: 5 * time.Millisecond}},
		{spec: "c.img?au=0", wantErr: true},
		{spec: "c.img?page=-1", wantErr: true},
		{spec: "c.img?au-cost=-1ms", wantErr: true},
		{spec: "c.img?write-speed=fast", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			o, _, err := parseSpec(tt.spec)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseSpec(%q) accepted it", tt.spec)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.writeSpeed != tt.want.writeSpeed || o.page != tt.want.page || o.au != tt.want.au || o.auCost != tt.want.auCost {
				t.Errorf("parseSpec(%q) = write-speed %v page %d au %d au-cost %v, want %v %d %d %v", tt.spec,
					o.writeSpeed, o.page, o.au, o.auCost, tt.want.writeSpeed, tt.want.page, tt.want.au, tt.want.auCost)
			}
		})
	}
}
