package drive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// The simulated readers of TestMisbehavingReaders: a slow card on USB 2
// (2 MB/s, 1 ms a command) on the virtual clock, so a reader that hangs
// costs its modelled timeouts and no wall time. The image is a few MiB
// short of the card. A reader that hangs costs one timeout (21 s) and one
// reset (6 s settle) per step down in command size: the 2x bound holds
// for images whose write and verify take longer than that, here 40 MiB.
const (
	misImage = 40<<20 + 4096
	misBase  = "size=48MiB&speed=2MB/s&latency=1ms&clock=virtual"
)

// misRow is one misbehaviour of a real reader, and what the kernel does
// with it (why the row expects what it does).
type misRow struct {
	name   string
	opts   string // sim options added to misBase
	quirks string // --quirks
	// readEnd also reads the whole card back: the end of the medium
	// matters for this misbehaviour.
	readEnd bool
	// wantErr, when set, is a part of the one error the row must end
	// with, where the kernel fails too; "" wants success.
	wantErr string
	// linuxFails: the kernel fails where usbflash succeeds, so the time
	// of a well-behaved reader bounds nothing (it is logged).
	linuxFails bool
	check      func(t *testing.T, d *Device)
}

var misRows = []misRow{
	// Command size. The kernel never sends more than 240 blocks to a
	// USB 2 reader, and 64 to its MAX_SECTORS_64 entries.
	{name: "hangs on commands above 240 blocks", opts: "choke=240:hang"},
	{name: "stalls with a phase error above 240 blocks", opts: "choke=240:stall"},
	{name: "drops off the bus above 240 blocks, back after a port reset", opts: "choke=240:disconnect"},
	// Linux fails this one unless the reader is in its table: it sends
	// 240 blocks. usbflash steps down to 64.
	{name: "hangs above 64 blocks, not in the table", opts: "choke=64", linuxFails: true},
	{name: "hangs above 64 blocks, MAX_SECTORS_64 in the table (Datafab 07c4:a4a5)", opts: "choke=64&vid=07c4&pid=a4a5", check: func(t *testing.T, d *Device) {
		if n := simOf(d).Stats().Chokes; n != 0 {
			t.Errorf("%d commands choked: the table's m must start at 64 blocks", n)
		}
	}},
	{name: "hangs above 64 blocks, --quirks m", opts: "choke=64&vid=1234&pid=5678", quirks: "1234:5678:m", check: noChokes},
	// The CSW.
	{name: "residue past the length", opts: "residue=over"},
	{name: "residue unrelated to what moved", opts: "residue=garbage"},
	{name: "residue the whole length", opts: "residue=length"},
	{name: "CSW signed USBU", opts: "csw-signature=USBU"},
	{name: "CSW in the data phase of a failed MODE SENSE", opts: "csw-in-data=1&reject-modesense=1", check: noResets},
	// Get Max LUN.
	{name: "Get Max LUN never answered", opts: "maxlun=hang"},
	{name: "Get Max LUN fails", opts: "maxlun=error"},
	{name: "every LUN is LUN 0, two reported, SINGLE_LUN given", opts: "maxlun=1&ignore-lun=1&vid=0c45&pid=1060&bcd=0100"},
	// Sense.
	{name: "RECOVERED ERROR on every READ and WRITE", opts: "sense=recovered:count=every"},
	{name: "HARDWARE ERROR 3 times", opts: "sense=hwerror:count=3"},
	{name: "empty sense 3 times", opts: "sense=empty:count=3"},
	{name: "unreadable sense twice", opts: "sense=garbage:count=2"},
	{name: "HARDWARE ERROR every time", opts: "sense=hwerror:count=every", wantErr: "hardware error"},
	// NOT READY.
	{name: "NOT READY until START UNIT", opts: "not-ready=04.02:until-start"},
	{name: "NOT READY 04/00 for 3 commands", opts: "not-ready=04.00:count=3"},
	{name: "NOT READY, manual intervention required", opts: "not-ready=04.03:until-start", wantErr: "unit not ready"},
	// Commands that hang.
	{name: "INQUIRY never answered", opts: "hang=inquiry", wantErr: "the reader did not recover"},
	{name: "INQUIRY never answered, FIX_INQUIRY in the table (Lexar 05dc:b002)", opts: "hang=inquiry&vid=05dc&pid=b002&bcd=0100"},
	{name: "INQUIRY never answered, --quirks FIX_INQUIRY", opts: "hang=inquiry&vid=1234&pid=5678", quirks: "1234:5678:FIX_INQUIRY"},
	{name: "MODE SENSE never answered", opts: "hang=modesense"},
	{name: "MODE SENSE never answered, NO_WP_DETECT in the table (Seagate 0bc2:3332)", opts: "hang=modesense&vid=0bc2&pid=3332", check: noResets},
	{name: "VPD pages, SYNCHRONIZE CACHE, READ CAPACITY(16) and START STOP never answered", opts: "hang=vpd,sync,rc16,startstop", check: noResets},
	{name: "SYNCHRONIZE CACHE never answered by a card that caches writes", opts: "hang=sync&write-cache=1", wantErr: "the reader did not recover"},
	// Mode data and the end of the medium.
	{name: "placeholder mode data until the first READ", opts: "mode-placeholder=1", check: func(t *testing.T, d *Device) {
		if d.Dev.(SCSI).SCSI().WriteProtected() {
			t.Error("a writable card taken for write-protected")
		}
	}},
	{name: "fails multi-block commands touching the last 8 blocks", opts: "last-sector-bug=8", readEnd: true},
	{name: "still resetting 5 s after a Mass Storage Reset, and hangs above 240 blocks", opts: "reset-settle=5s&choke=240", check: func(t *testing.T, d *Device) {
		if s := simOf(d).Stats(); s.LostCBWs != 0 || s.BOTResets != 1 {
			t.Errorf("%d CBWs lost, %d resets; want none lost after the one reset", s.LostCBWs, s.BOTResets)
		}
	}},
	{name: "fails the first READ(10) after the card goes in", opts: "initial-read10=1"},
	{name: "fails the first two READ(10)s, INITIAL_READ10 in the table (Feiya 090c:6000)", opts: "initial-read10=2&vid=090c&pid=6000&bcd=0100"},
	{name: "caches writes: flushed", opts: "write-cache=1", check: func(t *testing.T, d *Device) {
		if n := simOf(d).Stats().Opcodes[0x35]; n != 1 {
			t.Errorf("%d SYNCHRONIZE CACHE, want 1", n)
		}
	}},
	// Linux fails this one too without FIX_CAPACITY: the phantom block.
	{name: "capacity one block too big, not in the table", opts: "capacity-off-by-one=1", readEnd: true, wantErr: "capacity may be one block too many"},
	{name: "capacity one block too big, FIX_CAPACITY in the table (SanDisk 0781:0002)", opts: "capacity-off-by-one=1&vid=0781&pid=0002&bcd=0009", readEnd: true},
	{name: "capacity one block too big, --quirks c", opts: "capacity-off-by-one=1&vid=1234&pid=5678", quirks: "1234:5678:c", readEnd: true},
}

// simOf is the simulated reader of a sim: target.
func simOf(d *Device) *sim.Device { return d.Dev.(Simulated).Sim() }

func noChokes(t *testing.T, d *Device) {
	t.Helper()
	if n := simOf(d).Stats().Chokes; n != 0 {
		t.Errorf("%d commands choked", n)
	}
}

func noResets(t *testing.T, d *Device) {
	t.Helper()
	if s := simOf(d).Stats(); s.BOTResets != 0 || s.PortResets != 0 {
		t.Errorf("%d resets, %d port resets; want none", s.BOTResets, s.PortResets)
	}
}

// misRun writes the image to the simulated reader, verifies it, and with
// readEnd reads the whole card back; it returns the error that ended it
// and the modelled time the run took.
func misRun(t *testing.T, row misRow, img []byte) (time.Duration, error) {
	t.Helper()
	ctx := context.Background()
	card := filepath.Join(t.TempDir(), "card.img")
	opts := misBase
	if row.opts != "" {
		opts += "&" + row.opts
	}
	spec, err := Parse("sim:" + card + "?" + opts)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(ctx, spec, Options{Quirks: usbms.QuirkOverrides{Setting: row.quirks}})
	if err != nil {
		return 0, err
	}
	defer d.Close()
	if row.check != nil {
		defer row.check(t, d)
	}
	res, err := pipeline.Write(ctx, d.Dev, bytes.NewReader(img), pipeline.WriteOptions{ExpectedSize: int64(len(img)), Sync: true})
	if err == nil {
		_, err = pipeline.VerifyHash(ctx, d.Dev, int64(len(img)), res.SHA256, pipeline.VerifyOptions{})
	}
	if err == nil && row.readEnd {
		var back bytes.Buffer
		var rr pipeline.ReadResult
		rr, err = pipeline.Read(ctx, d.Dev, &back, d.Capacity(), pipeline.ReadOptions{})
		if err == nil {
			want := make([]byte, d.Capacity())
			f, _ := os.ReadFile(card)
			copy(want, f)
			if rr.SHA256 != sha256.Sum256(want) || !bytes.Equal(back.Bytes()[:len(img)], img) {
				err = errors.New("the card read back differs from what it holds")
			}
		}
	}
	if err == nil {
		if got, _ := os.ReadFile(card); !bytes.Equal(got[:len(img)], img) {
			err = errors.New("the card file does not hold the image")
		}
	}
	return simOf(d).Stats().ModelTime, err
}

// TestMisbehavingReaders writes, verifies (and where the end of the card
// matters, reads back whole) a card through each misbehaviour of real
// readers the simulator models: byte-exact, in at most twice the modelled
// time of a well-behaved reader of the same speed, where Linux's
// usb-storage and sd succeed; with one clear error where they fail too.
func TestMisbehavingReaders(t *testing.T) {
	img := make([]byte, misImage)
	for i := range img {
		img[i] = byte(i/512) ^ byte(i*7)
	}
	base, err := misRun(t, misRow{}, img)
	if err != nil {
		t.Fatalf("well-behaved reader: %v", err)
	}
	baseEnd, err := misRun(t, misRow{readEnd: true}, img)
	if err != nil {
		t.Fatalf("well-behaved reader, read to the end: %v", err)
	}
	t.Logf("well-behaved reader: %v (%v with the whole card read back) of modelled time", base, baseEnd)
	for _, row := range misRows {
		t.Run(row.name, func(t *testing.T) {
			took, err := misRun(t, row, img)
			if row.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), row.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, row.wantErr)
				}
				factsonly.Check(t, err.Error())
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := base
			if row.readEnd {
				want = baseEnd
			}
			ratio := float64(took) / float64(want)
			t.Logf("%v of modelled time, %.2fx a well-behaved reader", took.Round(time.Millisecond), ratio)
			if ratio > 2 && !row.linuxFails {
				t.Errorf("took %v of modelled time, %.2fx the %v of a well-behaved reader: more than 2x", took, ratio, want)
			}
		})
	}
}

// TestMisbehavingReadersWithoutTheirQuirk: a row that needs a quirk flag
// fails without it as the kernel does, and the error says what happened.
func TestMisbehavingReadersWithoutTheirQuirk(t *testing.T) {
	ctx := context.Background()
	card := filepath.Join(t.TempDir(), "card.img")
	spec, _ := Parse("sim:" + card + "?size=1MiB&maxlun=1&ignore-lun=1&clock=virtual")
	_, err := Open(ctx, spec, Options{})
	if failure.Of(err) != failure.Usage || !strings.Contains(err.Error(), "has 2 LUNs") {
		t.Errorf("one card seen as two LUNs, no SINGLE_LUN: %v", err)
	}
	spec, _ = Parse("sim:" + card + "?size=1MiB&maxlun=1&ignore-lun=1&clock=virtual&lun=1")
	d, err := Open(ctx, spec, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the second of two LUNs named, to read: %v", err)
	}
	d.Close()
}
