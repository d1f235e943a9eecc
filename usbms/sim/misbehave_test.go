package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/usbms"
)

// TestVirtualClock checks that the modelled clock charges latency, data
// time, host pauses and unanswered waits, and that on the virtual clock
// none of them is slept.
func TestVirtualClock(t *testing.T) {
	cfg := oneLUN(LUN{Blocks: 4096})
	cfg.Speed, cfg.Latency, cfg.VirtualClock = 1e6, time.Millisecond, true
	h := newHost(t, cfg)
	start := time.Now()
	if ex := h.run(0, false, 1<<20, cdbWrite10(0, 2048), pattern(1<<20, 1)); ex.csw.status != 0 {
		t.Fatalf("WRITE status %d", ex.csw.status)
	}
	want := time.Millisecond + time.Duration(float64(1<<20)/1e6*float64(time.Second))
	if got := h.d.Stats().ModelTime; got < want-time.Millisecond || got > want+time.Millisecond {
		t.Errorf("ModelTime after a 1 MiB WRITE at 1 MB/s = %v, want %v", got, want)
	}
	if err := h.d.Sleep(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// A transfer the device never answers ends at the host's deadline.
	h.d.Inject(Fault{Kind: NeverAnswer})
	h.tag++
	if _, err := h.d.BulkOut(context.Background(), buildCBW(h.tag, 0, false, 0, cdbTUR())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := h.d.BulkIn(ctx, make([]byte, cswLen))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CSW of a command never answered: %v, want the deadline", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the virtual clock slept: %v of wall time", time.Since(start))
	}
	if got := h.d.Stats().ModelTime; got < want+24*time.Second || got > want+26*time.Second {
		t.Errorf("ModelTime = %v, want about %v: the pause and the wait for the deadline are charged", got, want+25*time.Second)
	}
}

// dataPhase runs the CBW and the data phase of one command and returns
// the data phase's bytes and error, leaving the CSW unread.
func (h *host) dataPhase(ctx context.Context, lun byte, in bool, length uint32, cdb, out []byte) (int, []byte, error) {
	h.t.Helper()
	h.tag++
	if _, err := h.d.BulkOut(ctx, buildCBW(h.tag, length, in, lun, cdb)); err != nil {
		return 0, nil, err
	}
	if in {
		buf := make([]byte, length)
		n, err := h.d.BulkIn(ctx, buf)
		return n, buf[:n], err
	}
	n, err := h.d.BulkOut(ctx, out[:length])
	return n, nil, err
}

// TestChoke checks each way a reader chokes on a large READ or WRITE.
func TestChoke(t *testing.T) {
	for _, mode := range []ChokeMode{ChokeHang, ChokeStall, ChokeDisconnect} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := oneLUN(LUN{Blocks: 4096})
			cfg.VirtualClock = true
			cfg.Misbehaviour = Misbehaviour{ChokeBlocks: 8, ChokeMode: mode}
			h := newHost(t, cfg)
			// At the limit: fine.
			if ex := h.run(0, false, 8*512, cdbWrite10(0, 8), pattern(8*512, 1)); ex.csw.status != 0 {
				t.Fatalf("8-block WRITE: status %d", ex.csw.status)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, _, err := h.dataPhase(ctx, 0, false, 9*512, cdbWrite10(0, 9), pattern(9*512, 2))
			switch mode {
			case ChokeHang:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("9-block WRITE: %v, want no answer", err)
				}
				if _, err := h.d.ClassRequest(ctx, false, reqMassStorageReset, 0, nil); err != nil {
					t.Fatal(err)
				}
			case ChokeStall:
				if !errors.Is(err, usbms.ErrStall) {
					t.Fatalf("9-block WRITE: %v, want a stall", err)
				}
				h.d.ClearHalt(ctx, false)
				b := make([]byte, cswLen)
				n, err := h.d.BulkIn(ctx, b)
				if err != nil || decodeCSW(t, b[:n]).status != statusPhaseError {
					t.Fatalf("CSW after the stall: %v %v, want status 2", err, b[:n])
				}
			case ChokeDisconnect:
				if !errors.Is(err, usbms.ErrNoDevice) {
					t.Fatalf("9-block WRITE: %v, want the device gone", err)
				}
				if _, err := h.d.BulkIn(ctx, make([]byte, cswLen)); !errors.Is(err, usbms.ErrNoDevice) {
					t.Fatalf("CSW read while gone: %v", err)
				}
				if err := h.d.ResetPort(ctx); err != nil {
					t.Fatalf("port reset of a device that comes back: %v", err)
				}
				h.run(0, false, 0, cdbTUR(), nil) // 6/29 after the reset
			}
			if ex := h.run(0, false, 8*512, cdbWrite10(8, 8), pattern(8*512, 3)); ex.csw.status != 0 {
				t.Fatalf("8-block WRITE after the choke: status %d", ex.csw.status)
			}
			if s := h.d.Stats(); s.Chokes != 1 || s.LUNs[0].BlocksWritten != 16 {
				t.Errorf("Chokes %d, blocks written %d; want 1 and 16", s.Chokes, s.LUNs[0].BlocksWritten)
			}
		})
	}
}

// TestCSWMisbehaviour checks the residue lies, a constant foreign
// signature and the CSW sent in the data phase.
func TestCSWMisbehaviour(t *testing.T) {
	residue := map[ResidueMode]uint32{ResidueOver: 36 + 512, ResidueLength: 36}
	for mode, want := range residue {
		cfg := oneLUN(LUN{})
		cfg.Misbehaviour.Residue = mode
		ex := newHost(t, cfg).run(0, true, 36, cdbInquiry(false, 0, 36), nil)
		if len(ex.data) != 36 || ex.csw.residue != want {
			t.Errorf("residue=%s: %d bytes, residue %d; want 36 bytes, residue %d", mode, len(ex.data), ex.csw.residue, want)
		}
	}
	cfg := oneLUN(LUN{})
	cfg.Misbehaviour.Residue = ResidueGarbage
	if ex := newHost(t, cfg).run(0, true, 36, cdbInquiry(false, 0, 36), nil); ex.csw.residue == 0 || ex.csw.residue > 36 {
		t.Errorf("residue=garbage: residue %d, want 1 to 36", ex.csw.residue)
	}

	cfg = oneLUN(LUN{})
	cfg.Misbehaviour.CSWSignature = 0x55425355
	if ex := newHost(t, cfg).run(0, false, 0, cdbTUR(), nil); ex.csw.sig != 0x55425355 {
		t.Errorf("csw-signature=USBU: signature %#x", ex.csw.sig)
	}

	cfg = oneLUN(LUN{RejectModeSense: true})
	cfg.Misbehaviour.CSWInData = true
	h := newHost(t, cfg)
	n, data, err := h.dataPhase(context.Background(), 0, true, 192, []byte{opModeSense6, 0, 0x3F, 0, 192, 0}, nil)
	if err != nil || n != cswLen || decodeCSW(t, data).status != statusFailed || decodeCSW(t, data).residue != 192 {
		t.Fatalf("csw-in-data: %d bytes %x, %v; want the 13-byte CSW, status 1, residue 192", n, data, err)
	}
	if k, asc, _, _ := h.sense(0); k != keyIllegalRequest || asc != 0x20 {
		t.Errorf("sense after the CSW in the data phase: %X/%02X", k, asc)
	}
}

// TestMaxLUNMisbehaviour checks Get Max LUN's hang, error and made-up
// answer, and a device that ignores the LUN field.
func TestMaxLUNMisbehaviour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for mode, check := range map[MaxLUNMode]func(int, error) bool{
		MaxLUNHang:   func(_ int, err error) bool { return errors.Is(err, context.DeadlineExceeded) },
		MaxLUNError:  func(_ int, err error) bool { return err != nil && !errors.Is(err, usbms.ErrStall) },
		MaxLUNReport: func(n int, err error) bool { return err == nil && n == 1 },
	} {
		cfg := oneLUN(LUN{})
		cfg.VirtualClock = true
		cfg.Misbehaviour.MaxLUN, cfg.Misbehaviour.MaxLUNValue, cfg.Misbehaviour.IgnoreLUN = mode, 1, true
		h := newHost(t, cfg)
		b := make([]byte, 1)
		n, err := h.d.ClassRequest(ctx, true, reqGetMaxLUN, 0, b)
		if n == 1 {
			n = int(b[0])
		}
		if !check(n, err) {
			t.Errorf("maxlun=%s: %d, %v", mode, n, err)
		}
		if ex := h.run(1, true, 36, cdbInquiry(false, 0, 36), nil); ex.csw.status != 0 || ex.data[0] != 0 {
			t.Errorf("ignore-lun: INQUIRY of LUN 1: status %d, qualifier/type %#x; want LUN 0's", ex.csw.status, ex.data[0])
		}
	}
}

// TestSenseMisbehaviour checks the injected conditions of READ and WRITE.
func TestSenseMisbehaviour(t *testing.T) {
	tests := []struct {
		mode            SenseMode
		moved           int
		key, asc, ascq  byte
		garbageResponse bool
	}{
		{SenseRecovered, 4096, keyRecoveredError, 0x17, 0x01, false},
		{SenseEmpty, 0, keyNoSense, 0, 0, false},
		{SenseHardware, 0, keyHardwareError, 0x44, 0, false},
		{SenseGarbage, 0, 0, 0, 0, true},
	}
	for _, tt := range tests {
		cfg := oneLUN(LUN{})
		cfg.Misbehaviour.Sense, cfg.Misbehaviour.SenseCount = tt.mode, 1
		h := newHost(t, cfg)
		ex := h.run(0, false, 4096, cdbWrite10(0, 8), pattern(4096, 1))
		if ex.csw.status != statusFailed || ex.moved != 4096 && tt.moved == 4096 {
			t.Errorf("sense=%s: status %d, moved %d", tt.mode, ex.csw.status, ex.moved)
		}
		if got := h.d.Stats().LUNs[0].BlocksWritten; got != int64(tt.moved/512) {
			t.Errorf("sense=%s: %d blocks written, want %d", tt.mode, got, tt.moved/512)
		}
		k, asc, ascq, raw := h.sense(0)
		if tt.garbageResponse && raw[0] != 0 || !tt.garbageResponse && (k != tt.key || asc != tt.asc || ascq != tt.ascq) {
			t.Errorf("sense=%s: sense %X/%02X/%02X (%x)", tt.mode, k, asc, ascq, raw)
		}
		if ex := h.run(0, false, 4096, cdbWrite10(0, 8), pattern(4096, 1)); ex.csw.status != 0 {
			t.Errorf("sense=%s:count=1: the second WRITE failed too", tt.mode)
		}
	}
}

// TestNotReadyUntilStart checks a unit that needs START UNIT.
func TestNotReadyUntilStart(t *testing.T) {
	cfg := oneLUN(LUN{})
	cfg.Misbehaviour = Misbehaviour{NotReady: true, NotReadyASC: 0x04, NotReadyASCQ: 0x02, NotReadyUntilStart: true}
	h := newHost(t, cfg)
	for range 3 {
		if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != statusFailed {
			t.Fatal("TEST UNIT READY passed before START UNIT")
		}
		if k, asc, ascq, _ := h.sense(0); k != keyNotReady || asc != 4 || ascq != 2 {
			t.Fatalf("sense %X/%02X/%02X, want 2/04/02", k, asc, ascq)
		}
	}
	if ex := h.run(0, false, 0, []byte{opStartStopUnit, 1, 0, 0, 1, 0}, nil); ex.csw.status != 0 {
		t.Fatal("START UNIT failed")
	}
	if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 0 {
		t.Fatal("TEST UNIT READY failed after START UNIT")
	}
}

// TestMediumMisbehaviour checks the placeholder mode data, the last-sector
// bug, the capacity reported one block too big and the write cache bit.
func TestMediumMisbehaviour(t *testing.T) {
	cfg := oneLUN(LUN{Blocks: 100})
	cfg.Misbehaviour = Misbehaviour{ModePlaceholder: true, LastSectorBug: 4, CapacityOffByOne: true, WriteCache: true}
	h := newHost(t, cfg)
	modeSense := func() []byte {
		return h.run(0, true, 192, []byte{opModeSense6, 0, 0x3F, 0, 192, 0}, nil).data
	}
	if b := modeSense(); b[2]&0x80 == 0 || b[4+2]&0x04 == 0 {
		t.Errorf("MODE SENSE before any READ: %x, want WP and WCE", b)
	}
	if ex := h.run(0, true, 512, cdbRead10(0, 1), nil); ex.csw.status != 0 {
		t.Fatal("READ of block 0 failed")
	}
	if b := modeSense(); b[2]&0x80 != 0 {
		t.Errorf("MODE SENSE after a READ: %x, want no WP", b)
	}
	if ex := h.run(0, true, 8, []byte{opReadCapacity10, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil); ex.data[3] != 100 {
		t.Errorf("READ CAPACITY: last LBA %d, want 100 (the block count)", ex.data[3])
	}
	if ex := h.run(0, true, 8*512, cdbRead10(92, 8), nil); ex.csw.status != statusFailed || ex.moved != 4*512 {
		t.Errorf("8-block READ into the last 4: status %d, %d bytes; want failed after 4 blocks", ex.csw.status, ex.moved)
	}
	if k, asc, _, raw := h.sense(0); k != keyMediumError || asc != 0x11 || raw[6] != 96 {
		t.Errorf("sense %X/%02X information %d, want 3/11 at 96", k, asc, raw[6])
	}
	for lba := uint32(96); lba < 100; lba++ {
		if ex := h.run(0, true, 512, cdbRead10(lba, 1), nil); ex.csw.status != 0 {
			t.Errorf("1-block READ of %d failed", lba)
		}
	}
	if ex := h.run(0, true, 512, cdbRead10(100, 1), nil); ex.csw.status != statusFailed {
		t.Error("READ of the block past the end passed")
	}
}

// TestHang checks that the listed commands are never answered, every time.
func TestHang(t *testing.T) {
	cfg := oneLUN(LUN{})
	cfg.VirtualClock = true
	cfg.Misbehaviour.Hang = []HangCommand{HangModeSense, HangVPD}
	h := newHost(t, cfg)
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _, err := h.dataPhase(ctx, 0, true, 192, []byte{opModeSense6, 0, 0x3F, 0, 192, 0}, nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("MODE SENSE: %v, want no answer", err)
		}
		h.d.ClassRequest(context.Background(), false, reqMassStorageReset, 0, nil)
	}
	if ex := h.run(0, true, 36, cdbInquiry(false, 0, 36), nil); ex.csw.status != 0 {
		t.Error("standard INQUIRY hung with hang=modesense,vpd")
	}
}

// TestReaderOptions checks that every option parses into the Config and
// that bad values name what is wanted.
func TestReaderOptions(t *testing.T) {
	o, _, err := parseSpec("sim:x?vid=0bda&pid=0158&bcd=0100&quirks=mr&clock=virtual&choke=240:disconnect&residue=over" +
		"&csw-signature=USBU&csw-in-data=1&maxlun=hang&ignore-lun=1&sense=hwerror:count=every&not-ready=04.02:until-start" +
		"&hang=inquiry,sync&mode-placeholder=1&last-sector-bug=8&capacity-off-by-one=1&write-cache=1")
	if err != nil {
		t.Fatal(err)
	}
	var cfg Config
	o.reader.apply(&cfg)
	m := cfg.Misbehaviour
	if cfg.VID != 0x0bda || cfg.PID != 0x0158 || cfg.BCD != 0x0100 || cfg.Quirks != "mr" || !cfg.VirtualClock ||
		m.ChokeBlocks != 240 || m.ChokeMode != ChokeDisconnect || m.Residue != ResidueOver || m.CSWSignature != 0x55425355 ||
		!m.CSWInData || m.MaxLUN != MaxLUNHang || !m.IgnoreLUN || m.Sense != SenseHardware || m.SenseCount != 0 ||
		!m.NotReady || m.NotReadyASC != 4 || m.NotReadyASCQ != 2 || !m.NotReadyUntilStart ||
		len(m.Hang) != 2 || !m.ModePlaceholder || m.LastSectorBug != 8 || !m.CapacityOffByOne || !m.WriteCache {
		t.Errorf("parsed %+v", cfg)
	}
	for spec, want := range map[string]string{
		"choke=0":              "BLOCKS at least 1",
		"choke=8:garbage":      "hang, stall, disconnect",
		"residue=lie":          "over, garbage, length",
		"csw-signature=US":     "4 characters",
		"maxlun=-1":            "hang, error or a number",
		"sense=recovered:x=1":  ":count=N",
		"not-ready=4":          "ASC.ASCQ",
		"hang=read":            "inquiry, vpd, modesense",
		"vid=xyz":              "hexadecimal",
		"clock=fast":           "virtual or real",
		"last-sector-bug=0":    "1 or more",
		"no-such-option=1":     "capacity-off-by-one",
		"not-ready=04.02:soon": "until-start",
	} {
		if _, _, err := parseSpec("sim:x?" + spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}

// TestResetSettle: CBWs that come too soon after a Mass Storage Reset are
// lost; after the settle time they are taken again.
func TestResetSettle(t *testing.T) {
	cfg := oneLUN(LUN{})
	cfg.VirtualClock = true
	cfg.Misbehaviour.ResetSettle = 6 * time.Second
	h := newHost(t, cfg)
	ctx := context.Background()
	if _, err := h.d.ClassRequest(ctx, false, reqMassStorageReset, 0, nil); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	h.tag++
	if _, err := h.d.BulkOut(tctx, buildCBW(h.tag, 0, false, 0, cdbTUR())); err != nil {
		t.Fatal(err)
	}
	if _, err := h.d.BulkIn(tctx, make([]byte, cswLen)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CSW of a CBW sent during the settle time: %v, want none", err)
	}
	h.d.ClassRequest(ctx, false, reqMassStorageReset, 0, nil)
	h.d.Sleep(ctx, 6*time.Second)
	if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 0 {
		t.Fatalf("TEST UNIT READY after the settle time: status %d", ex.csw.status)
	}
	if n := h.d.Stats().LostCBWs; n != 1 {
		t.Errorf("%d CBWs lost, want 1", n)
	}
	if _, _, err := parseSpec("sim:x?reset-settle=-1s"); err == nil || !strings.Contains(err.Error(), "duration of 0 or more") {
		t.Errorf("reset-settle=-1s: %v", err)
	}
}
