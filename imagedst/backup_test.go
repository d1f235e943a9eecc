package imagedst

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/outfile"
	"github.com/usbflash/usbflash/pipeline"
)

// card is an in-memory device. From read pass `changeOn` on (a pass is a
// read of LBA 0) its first byte reads differently; reading LBA 0 in pass
// `cancelOn` calls cancel; a read at LBA `failAt` in pass `failOn` fails.
type card struct {
	mu       sync.Mutex
	data     []byte
	pass     int
	changeOn int
	cancelOn int
	cancel   func()
	failOn   int
	failAt   int64
}

func (c *card) BlockSize() int                                   { return 512 }
func (c *card) BlockCount() int64                                { return int64(len(c.data) / 512) }
func (c *card) WriteBlocks(context.Context, int64, []byte) error { return errors.New("read only") }
func (c *card) Sync(context.Context) error                       { return nil }

func (c *card) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lba == 0 {
		c.pass++
		if c.pass == c.cancelOn {
			c.cancel()
		}
	}
	if c.pass == c.failOn && lba == c.failAt {
		return fmt.Errorf("LBA %d: medium error", lba)
	}
	copy(p, c.data[lba*512:])
	if lba == 0 && c.changeOn > 0 && c.pass >= c.changeOn {
		p[0] ^= 0xff
	}
	return nil
}

// TestBackup: only a complete (and, when asked, verified) backup gets its
// name; a cancel of the first read leaves nothing; a second read that
// differs, fails or is cancelled keeps the first as OUT.part, saying so,
// and writes no OUT.
func TestBackup(t *testing.T) {
	data := osLike(1 << 20)
	tests := []struct {
		name     string
		verify   bool
		change   int // read pass from which the card reads differently
		cancel   int // read pass that Ctrl-C comes in
		failOn   int // read pass in which LBA 1024 fails
		want     string
		wantPart bool
	}{
		{"read", false, 0, 0, 0, "", false},
		{"read and verify", true, 0, 0, 0, "", false},
		{"cancelled read", true, 0, 1, 0, "cancel", false},
		{"cancelled verify", true, 0, 2, 0, "cancelled verify", true},
		{"second read differs", true, 2, 0, 0, "differs", true},
		{"second read fails", true, 0, 0, 2, "fails", true},
		{"first read fails", true, 0, 0, 1, "fails", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dev := &card{data: data, changeOn: tt.change, cancelOn: tt.cancel, cancel: cancel, failOn: tt.failOn, failAt: 1024}
			dir := t.TempDir()
			out := filepath.Join(dir, "b.img")
			if err := CheckBackup(out, false); err != nil {
				t.Fatal(err)
			}
			b, err := StartBackup(out, false)
			if err != nil {
				t.Fatal(err)
			}
			res, err := b.Run(ctx, dev, BackupOptions{Name: "sim:card.img", Size: int64(len(data)), Verify: tt.verify, TransferSize: 64 << 10})
			b.Abort()
			var ve *VerifyError
			var pe *pipeline.VerifyError
			switch tt.want {
			case "":
				if err != nil {
					t.Fatal(err)
				}
				if (res.Verify != nil) != tt.verify || res.Read.Bytes != int64(len(data)) {
					t.Errorf("result %+v", res)
				}
			case "cancel":
				if !errors.Is(err, context.Canceled) || errors.As(err, &ve) {
					t.Errorf("Run = %v, want a cancel", err)
				}
			case "cancelled verify":
				if !errors.Is(err, context.Canceled) || !errors.As(err, &ve) || !strings.Contains(err.Error(), "the first read is complete and kept in "+out+PartSuffix) {
					t.Errorf("Run = %v, want a cancel that keeps the first read", err)
				}
			case "differs":
				if !errors.As(err, &ve) || !errors.As(err, &pe) || ve.Part != out+PartSuffix {
					t.Errorf("Run = %v, want a *VerifyError over a *pipeline.VerifyError", err)
				}
			case "fails":
				if err == nil || errors.As(err, &pe) {
					t.Errorf("Run = %v, want the read's failure", err)
				}
				if tt.wantPart && !errors.As(err, &ve) {
					t.Errorf("Run = %v, want a *VerifyError", err)
				}
			}
			var names []string
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				names = append(names, e.Name())
			}
			var want []string
			switch {
			case tt.want == "":
				want = []string{"b.img", "b.img.bmap"}
			case tt.wantPart:
				want = []string{"b.img.part"}
			}
			if fmt.Sprint(names) != fmt.Sprint(want) {
				t.Errorf("the directory holds %v, want %v", names, want)
			}
			if tt.wantPart {
				if kept, _ := os.ReadFile(out + PartSuffix); !bytes.Equal(kept, data) {
					t.Error("the kept .part is not the first read")
				}
			}
		})
	}
}

// TestBackupRefuses: an existing OUT or block map, or a directory that is
// not there, is refused before the card is opened, naming what the user
// gave.
func TestBackupRefuses(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.img")
	os.WriteFile(existing, nil, 0o644)
	os.WriteFile(filepath.Join(dir, "map.img.bmap"), nil, 0o644)
	tests := []struct {
		out       string
		overwrite bool
		want      func(error) bool
	}{
		{existing, false, func(err error) bool { return errors.Is(err, ErrExists) }},
		{existing, true, func(err error) bool { return err == nil }},
		{filepath.Join(dir, "map.img"), false, func(err error) bool { return errors.Is(err, ErrExists) }},
		{filepath.Join(dir, "missing", "b.img"), true, func(err error) bool {
			var oe *outfile.Error
			return errors.As(err, &oe) && oe.Op == outfile.OpCreate && oe.Path == filepath.Join(dir, "missing", "b.img")
		}},
	}
	for _, tt := range tests {
		if err := CheckBackup(tt.out, tt.overwrite); !tt.want(err) {
			t.Errorf("CheckBackup(%s, %v) = %v", tt.out, tt.overwrite, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the checks left %d files, want the 2 there were", len(entries))
	}
}

// TestBackupDiscard: a second interrupt removes the .part file while the
// first read goes on, and the backup then never gets its name; once the
// first read is complete (a verify under way) it keeps it.
func TestBackupDiscard(t *testing.T) {
	data := osLike(1 << 20)
	out := filepath.Join(t.TempDir(), "b.img")
	b, err := StartBackup(out, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	discarded := make(chan bool, 1)
	dev := &card{data: data, cancelOn: 1, cancel: func() { discarded <- b.Discard() }}
	if _, err := b.Run(context.Background(), dev, BackupOptions{Size: int64(len(data))}); err == nil {
		t.Error("a discarded backup was completed")
	}
	if !<-discarded {
		t.Error("Discard removed nothing")
	}
	for _, p := range []string{out, out + PartSuffix} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists", p)
		}
	}
}

// TestExtentOfDamagedTable: with used, a card whose partition table cannot
// be followed is read whole, saying why, as a card without one is; a card
// that fails to read its first block is an error.
func TestExtentOfDamagedTable(t *testing.T) {
	const size = 4 << 20
	mbr := func(typ byte, start, count uint32) []byte {
		d := make([]byte, size)
		e := d[446:]
		e[4] = typ
		e[8], e[9], e[10], e[11] = byte(start), byte(start>>8), byte(start>>16), byte(start>>24)
		e[12], e[13], e[14], e[15] = byte(count), byte(count>>8), byte(count>>16), byte(count>>24)
		d[510], d[511] = 0x55, 0xAA
		return d
	}
	garbage := mbr(0xEE, 1, size/512-1)
	copy(garbage[512:], "EFI PART")
	for i := 520; i < 1024; i++ {
		garbage[i] = byte(i*131 + 7)
	}
	tests := []struct {
		name    string
		data    []byte
		want    Extent
		damaged bool
	}{
		{"MBR past the end", mbr(0x83, 2048, 1<<20), Extent{Size: size, Capacity: size, Table: "none"}, true},
		{"protective MBR, no GPT", mbr(0xEE, 1, size/512-1), Extent{Size: size, Capacity: size, Table: "none"}, true},
		{"EFI PART then garbage", garbage, Extent{Size: size, Capacity: size, Table: "none"}, true},
		{"MBR", mbr(0x83, 2048, 2048), Extent{Size: 4096 * 512, Capacity: size, Table: "MBR"}, false},
		{"no table", make([]byte, size), Extent{Size: size, Capacity: size, Table: "none"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExtentOf(context.Background(), &card{data: tt.data}, "sim:c.img", -1, true)
			if err != nil || (got.Damaged != nil) != tt.damaged {
				t.Fatalf("ExtentOf = %+v, %v; want damaged %v", got, err, tt.damaged)
			}
			got.Damaged = nil
			if got != tt.want {
				t.Errorf("ExtentOf = %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := ExtentOf(context.Background(), &card{data: make([]byte, size), failOn: 1, failAt: 0}, "sim:c.img", -1, true); err == nil {
		t.Error("a card whose first block fails to read gave an extent")
	}
}

// TestBackupDiscardDuringVerify: a second interrupt during the second
// read leaves the complete first read as the .part file.
func TestBackupDiscardDuringVerify(t *testing.T) {
	data := osLike(1 << 20)
	out := filepath.Join(t.TempDir(), "b.img")
	b, err := StartBackup(out, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	discarded := make(chan bool, 1)
	dev := &card{data: data, cancelOn: 2, cancel: func() { discarded <- b.Discard(); cancel() }}
	_, err = b.Run(ctx, dev, BackupOptions{Size: int64(len(data)), Verify: true})
	var ve *VerifyError
	if !errors.As(err, &ve) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want the verify's cancel", err)
	}
	if <-discarded || !b.Kept() {
		t.Error("Discard removed the complete first read")
	}
	b.Abort()
	if kept, _ := os.ReadFile(out + PartSuffix); !bytes.Equal(kept, data) {
		t.Error("the .part file is not the first read")
	}
}
