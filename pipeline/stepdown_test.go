package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// Issue 45: after a reader that fails large commands is stepped down, the
// write goes on at the smaller size. Does each command then cost what it
// costs when that size is chosen from the start? The engine hands the
// LUN its large buffers as before and the LUN cuts each into commands of
// the cap, back to back (usbms's transfer loop); nothing else changes.
// These compare the commands on the wire, command by command, and (the
// benchmark) the reader's modelled time and the host's.

// cmdLog is an Endpoint that records every WRITE CBW it carries: the
// command's LBA and its data length. Its pauses are the simulator's
// (usbms.Sleeper), so that they run on its clock.
type cmdLog struct {
	*sim.Device
	mu     sync.Mutex
	writes []loggedCmd
}

type loggedCmd struct{ lba, bytes int64 }

func (c *cmdLog) BulkOut(ctx context.Context, p []byte) (int, error) {
	if len(p) == 31 && binary.LittleEndian.Uint32(p) == 0x43425355 { // a CBW ("USBC")
		cdb := p[15 : 15+p[14]&0x1f]
		if len(cdb) > 0 && (cdb[0] == scsi.OpWrite10 || cdb[0] == scsi.OpWrite16) {
			lba := int64(binary.BigEndian.Uint32(cdb[2:6]))
			if cdb[0] == scsi.OpWrite16 {
				lba = int64(binary.BigEndian.Uint64(cdb[2:10]))
			}
			c.mu.Lock()
			c.writes = append(c.writes, loggedCmd{lba, int64(binary.LittleEndian.Uint32(p[8:12]))})
			c.mu.Unlock()
		}
	}
	return c.Device.BulkOut(ctx, p)
}

// stepDownRun is one write of img to a reader that stalls commands of more
// than choke blocks, at transfer bytes a buffer.
type stepDownRun struct {
	writes []loggedCmd // every WRITE sent, in order
	stats  sim.Stats
	capAt  int           // writes sent before the last step down was said
	capT   time.Duration // the reader's modelled time then
	wall   time.Duration // host time of the write, and after the last step down
	after  time.Duration
}

func runStepDown(tb testing.TB, img []byte, choke int64, transfer int, virtual bool) stepDownRun {
	tb.Helper()
	spec := fmt.Sprintf("sim:%s?size=%d&speed=40MB/s&latency=1ms&choke=%d:stall",
		filepath.Join(tb.TempDir(), "card.img"), (len(img)/testBS+1)*testBS+4<<20, choke)
	if virtual {
		spec += "&clock=virtual"
	}
	dev, err := sim.Open(spec)
	if err != nil {
		tb.Fatal(err)
	}
	defer dev.Close()
	log := &cmdLog{Device: dev}
	var run stepDownRun
	var capWall time.Time
	onNotice := func(n usbms.Notice) {
		if n.Kind == usbms.NoticeTransferCap {
			log.mu.Lock()
			run.capAt = len(log.writes)
			log.mu.Unlock()
			run.capT = dev.Stats().ModelTime
			capWall = time.Now()
		}
	}
	tr := usbms.NewTransport(log, usbms.TransportOptions{Name: "sim", OnNotice: onNotice})
	lun, err := usbms.OpenLUN(context.Background(), tr, 0, usbms.LUNOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	start, before := time.Now(), dev.Stats().ModelTime
	if _, err := Write(context.Background(), lun, bytes.NewReader(img), WriteOptions{TransferSize: transfer, ExpectedSize: int64(len(img))}); err != nil {
		tb.Fatalf("Write at %d bytes a transfer: %v", transfer, err)
	}
	run.wall = time.Since(start)
	run.after = run.wall
	if !capWall.IsZero() {
		run.after = time.Since(capWall)
	}
	run.writes, run.stats = log.writes, dev.Stats()
	run.stats.ModelTime -= before
	run.capT -= before
	if run.capT < 0 {
		run.capT = 0
	}
	return run
}

// TestStepDownCommands: a write that starts at 1 MiB on a reader that
// stalls above 32 KiB sends, once stepped down, exactly the WRITEs a write
// started at 32 KiB sends for the same bytes: every one of 32 KiB but the
// image's last, at the same LBAs. Only the first MiB differs, which the
// larger write zeroes whole before it writes it last (33 commands at 32
// KiB from the start, 64 stepped down), and the commands that failed.
func TestStepDownCommands(t *testing.T) {
	const choke = 64 // blocks: 32 KiB
	img := testImage(6<<20+700, 45)
	down := runStepDown(t, img, choke, 1<<20, true)
	fresh := runStepDown(t, img, choke, choke*testBS, true)

	if fresh.stats.Chokes != 0 || fresh.capAt != 0 {
		t.Fatalf("the write at 32 KiB choked %d times: the reader is not what the test needs", fresh.stats.Chokes)
	}
	// 1 MiB fails, then 120 KiB: two steps, each one failed WRITE.
	if down.stats.Chokes != 2 {
		t.Fatalf("%d commands choked, want 2 (1 MiB, then 120 KiB)", down.stats.Chokes)
	}
	after := down.writes[down.capAt:]
	for _, w := range after {
		if w.bytes > choke*testBS {
			t.Fatalf("a WRITE of %d bytes after the step down to %d", w.bytes, choke*testBS)
		}
	}
	beyond := func(ws []loggedCmd) []loggedCmd {
		return slices.DeleteFunc(slices.Clone(ws), func(w loggedCmd) bool { return w.lba < (1<<20)/testBS })
	}
	if a, b := beyond(after), beyond(fresh.writes); !slices.Equal(a, b) {
		t.Errorf("past the first MiB the stepped-down write sent %d WRITEs, the one at 32 KiB from the start %d; they differ:\n%v\n%v", len(a), len(b), a, b)
	}
	first := func(ws []loggedCmd) (n, b int64) {
		for _, w := range ws {
			if w.lba < (1<<20)/testBS {
				n++
				b += w.bytes
			}
		}
		return n, b
	}
	if n, b := first(after); n != 64 || b != 2<<20 {
		t.Errorf("the first MiB, stepped down: %d WRITEs of %d bytes, want 64 of 2 MiB (zeroed, then written last)", n, b)
	}
	if n, b := first(fresh.writes); n != 33 || b != 1<<20+choke*testBS {
		t.Errorf("the first MiB at 32 KiB: %d WRITEs of %d bytes, want 33 (one zeroing)", n, b)
	}
	// What the reader was sent, all told: the stepped-down write's extra
	// commands are its two failed ones and the larger zeroing.
	if d := down.stats.Opcodes[scsi.OpWrite10] - fresh.stats.Opcodes[scsi.OpWrite10]; d != 2+31 {
		t.Errorf("the stepped-down write sent %d WRITEs more, want 33 (2 failed, a zeroing 31 commands longer)", d)
	}
}

// BenchmarkStepDown writes the same image to the same kind of reader
// (stalls above 32 KiB, 40 MB/s, 1 ms a command) from 1 MiB, stepped down,
// and at 32 KiB from the start, in turn, and reports the ratios: the
// reader's modelled time of the whole write (model-ratio: the step down's
// two resets included, each with its 6 s settle), of the write after the
// step down against the whole from-the-start write (model-after-ratio), and
// the host's time of the same (wall-after-ratio). The goal is the
// after-ratios within 1.1; the whole write pays the resets once.
//
//	go test -run '^$' -bench StepDown -benchtime 3x ./pipeline/
func BenchmarkStepDown(b *testing.B) {
	img := testImage(16<<20+700, 46)
	var model, modelAfter, wallAfter float64
	n := 0
	for b.Loop() {
		down := runStepDown(b, img, 64, 1<<20, true)
		fresh := runStepDown(b, img, 64, 32<<10, true)
		model += float64(down.stats.ModelTime) / float64(fresh.stats.ModelTime)
		modelAfter += float64(down.stats.ModelTime-down.capT) / float64(fresh.stats.ModelTime)
		wallAfter += float64(down.after) / float64(fresh.wall)
		n++
	}
	b.ReportMetric(model/float64(n), "model-ratio")
	b.ReportMetric(modelAfter/float64(n), "model-after-ratio")
	b.ReportMetric(wallAfter/float64(n), "wall-after-ratio")
}
