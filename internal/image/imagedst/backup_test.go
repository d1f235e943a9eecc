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

	"github.com/usbflash/usbflash/internal/lib/outfile"
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
// first read goes on, and the backup then never gets its name; during the
// second read it leaves the complete first read as the .part file.
func TestBackupDiscard(t *testing.T) {
	data := osLike(1 << 20)
	for _, tc := range []struct {
		name   string
		verify bool
		pass   int // the read pass the second interrupt comes in
	}{{"first read", false, 1}, {"second read", true, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "b.img")
			b, err := StartBackup(out, false)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Abort()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			discarded := make(chan bool, 1)
			dev := &card{data: data, cancelOn: tc.pass, cancel: func() { discarded <- b.Discard(); cancel() }}
			_, err = b.Run(ctx, dev, BackupOptions{Size: int64(len(data)), Verify: tc.verify})
			var ve *VerifyError
			if err == nil || errors.As(err, &ve) != tc.verify {
				t.Fatalf("Run = %v", err)
			}
			if removed := <-discarded; removed == tc.verify || b.Kept() != tc.verify {
				t.Errorf("Discard removed the file: %v, want %v", removed, !tc.verify)
			}
			b.Abort()
			part, _ := os.ReadFile(out + PartSuffix)
			if _, err := os.Stat(out); err == nil || bytes.Equal(part, data) != tc.verify {
				t.Errorf("%s exists, or the .part file is the first read: %v", out, bytes.Equal(part, data))
			}
		})
	}
}
