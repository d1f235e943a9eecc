package session

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/bmap"
	"github.com/usbflash/usbflash/internal/image/imagedst"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/usbms"
)

// holeyCard is a card of size bytes: a pattern with zero runs, whose MBR
// (when end > 0) has one partition ending at byte end.
func holeyCard(size, end int) []byte {
	b := testpattern.Bytes(size, 8)
	for off := 256 << 10; off < size; off += 1 << 20 {
		clear(b[off : off+384<<10])
	}
	clear(b[446:512])
	if end > 0 {
		e := b[446+16:]
		e[4] = 0x83
		binary.LittleEndian.PutUint32(e[8:], 2048)
		binary.LittleEndian.PutUint32(e[12:], uint32(end/512-2048))
		b[510], b[511] = 0x55, 0xAA
	}
	return b
}

// decoded is the image a backup file holds.
func decoded(t *testing.T, path string) []byte {
	t.Helper()
	src, err := image.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	b, err := io.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBackupSession: a backup reads as much as it is told (the whole card,
// a size, the end of the last partition, the whole card when the table
// is missing or damaged), in every format, with a block map of what is
// not zero beside it; it refuses, before reading, an OUT that exists or is
// no file name and a size the card does not have; a device error and a
// stop in the first read leave no file; a second read that differs or is
// stopped keeps the complete first read as OUT.part, saying so.
func TestBackupSession(t *testing.T) {
	t.Parallel()
	const size = 4 << 20
	for _, tc := range []struct {
		name  string
		card  []byte
		query string // the sim target's options
		cfg   BackupConfig
		out   string // OUT's name
		stop  pipeline.Phase
		write bool // the card changes at the second read
		bytes int  // the backup's, or -1: failed
		table string
		check func(error) bool
		files []string // left in OUT's directory when it failed
	}{
		{name: "whole card, zstd, verified", card: holeyCard(size, 0), cfg: BackupConfig{Verify: true}, out: "b.img.zst", bytes: size},
		{name: "gzip, 64 KiB reads", card: holeyCard(size, 0), cfg: BackupConfig{TransferSize: 64 << 10}, out: "b.img.gz", bytes: size},
		{name: "xz, size", card: holeyCard(size, 0), cfg: BackupConfig{Size: 1000448}, out: "b.img.xz", bytes: 1000448},
		{name: "raw, used MBR", card: holeyCard(size, 3<<20), cfg: BackupConfig{Used: true}, out: "b.img", bytes: 3 << 20, table: "MBR"},
		{name: "used, no table", card: holeyCard(size, 0), cfg: BackupConfig{Used: true}, out: "b.img", bytes: size, table: "none"},
		{name: "used, MBR past the end", card: holeyCard(size, 6<<20), cfg: BackupConfig{Used: true}, out: "b.img", bytes: size, table: "none"},
		{name: "existing OUT", card: holeyCard(size, 0), out: "old.img", bytes: -1,
			check: func(err error) bool { return errors.Is(err, imagedst.ErrExists) }, files: []string{"old.img"}},
		{name: "existing OUT, forced", card: holeyCard(size, 0), cfg: BackupConfig{Force: true}, out: "old.img", bytes: size},
		{name: "OUT is standard output", card: holeyCard(size, 0), out: "-", bytes: -1,
			check: func(err error) bool { return failure.SettingOf(err) == SettingOut }},
		{name: "size and used", card: holeyCard(size, 0), cfg: BackupConfig{Size: 1 << 20, Used: true}, out: "b.img", bytes: -1,
			check: func(err error) bool { return failure.SettingOf(err) == SettingSize }},
		{name: "size past the card", card: holeyCard(size, 0), cfg: BackupConfig{Size: size + 512}, out: "b.img", bytes: -1,
			check: func(err error) bool { return errors.As(err, new(*imagedst.SizeError)) }},
		{name: "buffers 1", card: holeyCard(size, 0), cfg: BackupConfig{Buffers: 1}, out: "b.img", bytes: -1,
			check: func(err error) bool { return failure.SettingOf(err) == SettingBuffers }},
		{name: "device error", card: holeyCard(size, 0), query: "?fault=medium-error:lba=5000,persistent", cfg: BackupConfig{TransferSize: 64 << 10}, out: "b.img.xz", bytes: -1,
			check: func(err error) bool {
				return errors.As(err, new(*pipeline.DeviceError)) && strings.Contains(err.Error(), "LBA 4992")
			}},
		{name: "stopped in the first read", card: holeyCard(size, 0), query: "?speed=4MB/s", cfg: BackupConfig{TransferSize: 256 << 10}, out: "b.img.zst", stop: pipeline.PhaseRead, bytes: -1,
			check: func(err error) bool {
				return errors.Is(err, context.Canceled) && !errors.As(err, new(*imagedst.VerifyError))
			}},
		{name: "stopped in the second read", card: holeyCard(size, 0), query: "?speed=8MB/s", cfg: BackupConfig{Verify: true, TransferSize: 256 << 10}, out: "b.img.zst", stop: pipeline.PhaseVerify, bytes: -1,
			check: func(err error) bool {
				return errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "the first read is complete and kept in")
			}, files: []string{"b.img.zst.part"}},
		// The end of the card: the last sectors are read one per command,
		// which a reader with the last-sector bug needs; a reader that
		// reports one block too many fails at the end, and FIX_CAPACITY
		// (c) reads the card it is.
		{name: "to the end, a reader with the last-sector bug", card: holeyCard(size, 0), query: "?last-sector-bug=8", out: "b.img", bytes: size},
		{name: "to the end, a capacity one block too many", card: holeyCard(size, 0), query: "?capacity-off-by-one=1&vid=1234&pid=5678", out: "b.img", bytes: -1,
			check: func(err error) bool {
				return failure.Of(err) == failure.Device && errors.Is(err, usbms.ErrCapacityOffByOne) && strings.Contains(err.Error(), "the last")
			}},
		{name: "to the end, a capacity one block too many, FIX_CAPACITY given", card: holeyCard(size, 0), query: "?capacity-off-by-one=1&vid=1234&pid=5678",
			cfg: BackupConfig{Readers: &drive.Readers{Quirks: usbms.QuirkOverrides{Setting: "1234:5678:c"}}}, out: "b.img", bytes: size},
		{name: "the second read differs", card: holeyCard(size, 0), cfg: BackupConfig{Verify: true, TransferSize: 64 << 10}, out: "b.img", write: true, bytes: -1,
			check: func(err error) bool {
				return errors.As(err, new(*pipeline.VerifyError)) && strings.Contains(err.Error(), "differs from the first")
			}, files: []string{"b.img.part"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			card := filepath.Join(t.TempDir(), "card.img")
			if err := os.WriteFile(card, tc.card, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "old.img"), []byte("yesterday's backup"), 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := drive.Parse("sim:" + card + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var table string
			cfg := tc.cfg
			cfg.Out = tc.out
			if tc.out != "-" {
				cfg.Out = filepath.Join(dir, tc.out)
			}
			cfg.Observer = ObserverFunc(func(e Event) {
				switch e := e.(type) {
				case ExtentChosen:
					table = e.Extent.Table
				case Progress:
					if e.Phase == tc.stop && e.Done > 0 && e.Done < e.Total {
						cancel()
					}
					if tc.write && e.Phase == pipeline.PhaseVerify {
						tc.write = false
						if err := os.WriteFile(card, append([]byte("another card"), tc.card[12:]...), 0o644); err != nil {
							t.Error(err)
						}
					}
				}
			})
			b, err := NewBackup(cfg)
			var res *BackupResult
			if err == nil {
				res, err = b.Run(ctx, spec)
			}
			if tc.bytes < 0 {
				if err == nil || !tc.check(err) {
					t.Fatalf("backup: %v", err)
				}
				var names []string
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if e.Name() != "old.img" {
						names = append(names, e.Name())
					}
				}
				if want := slices.DeleteFunc(slices.Clone(tc.files), func(s string) bool { return s == "old.img" }); fmt.Sprint(names) != fmt.Sprint(want) {
					t.Errorf("left %v, want %v", names, want)
				}
				if old, _ := os.ReadFile(filepath.Join(dir, "old.img")); string(old) != "yesterday's backup" {
					t.Error("an existing file was changed")
				}
				return
			}
			if err != nil {
				t.Fatalf("backup: %v", err)
			}
			got := decoded(t, cfg.Out)
			if !bytes.Equal(got, tc.card[:tc.bytes]) || res.Read.Bytes != int64(tc.bytes) || table != tc.table || (res.Verify != nil) != cfg.Verify {
				t.Fatalf("backup of %d bytes (table %q, verified %v), want the card's first %d (table %q)", len(got), table, res.Verify != nil, tc.bytes, tc.table)
			}
			data, err := os.ReadFile(cfg.Out + imagedst.BMapSuffix)
			if err != nil {
				t.Fatal(err)
			}
			m, err := bmap.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off < len(got); off += 4096 {
				end := min(off+4096, len(got))
				if zero := bytes.Equal(got[off:end], make([]byte, end-off)); m.Mapped(int64(off), int64(end-off)) == zero {
					t.Fatalf("block at %d: mapped %v but all zero %v", off, !zero, zero)
				}
			}
			// Written back to a blank card with its block map, the backup
			// is the card it was read from.
			blank := filepath.Join(t.TempDir(), "blank.img")
			to, err := drive.Parse("sim:" + blank + fmt.Sprintf("?size=%d", size))
			if err != nil {
				t.Fatal(err)
			}
			var mapped bool
			if _, err := Run(context.Background(), Config{Image: image.Ref{Path: cfg.Out}, Targets: Targets{Force: true}, Engine: Engine{Verify: true}, Output: Output{Observer: ObserverFunc(func(e Event) { _, ok := e.(BlockMapChosen); mapped = mapped || ok })}}, []drive.Spec{to}); err != nil || !mapped {
				t.Fatalf("writing the backup back: %v (block map used: %v)", err, mapped)
			}
			if back, _ := os.ReadFile(blank); !bytes.Equal(back[:tc.bytes], tc.card[:tc.bytes]) {
				t.Error("the backup written back is not the card")
			}
		})
	}
}

// TestBackupAbort: what a second interrupt says it left, at each point.
func TestBackupAbort(t *testing.T) {
	b, err := NewBackup(BackupConfig{Out: filepath.Join(t.TempDir(), "b.img")})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Abort(); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "nothing was written") {
		t.Errorf("Abort before the card opened = %v", err)
	}
}
