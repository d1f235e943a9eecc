package cardfs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat32"
)

// writeLayout writes l's bytes to a sparse file of the card's capacity,
// and its partition alone to another, for the file systems' own checkers.
func writeLayout(t *testing.T, l *Layout, capacity int64) (card, part string) {
	t.Helper()
	dir := t.TempDir()
	card, part = filepath.Join(dir, "card.img"), filepath.Join(dir, "part.img")
	for _, f := range []struct {
		path      string
		from, end int64
	}{{card, 0, capacity}, {part, l.PartitionStart, l.PartitionStart + l.PartitionSize}} {
		out, err := os.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := out.Truncate(f.end - f.from); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		for off := f.from; off < l.Size(); off += int64(len(buf)) {
			n, err := l.ReadAt(buf, off)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if !bytes.Equal(buf[:n], make([]byte, n)) {
				if _, err := out.WriteAt(buf[:n], off-f.from); err != nil {
					t.Fatal(err)
				}
			}
		}
		out.Close()
	}
	return card, part
}

// fsck runs a file system checker read-only; it fails the test when the
// checker is missing (Debian's dosfstools and exfatprogs: .ci/run installs
// them) or finds anything.
func fsck(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(args[0])
	if err != nil {
		for _, dir := range []string{"/usr/sbin", "/sbin"} {
			if _, err2 := os.Stat(filepath.Join(dir, args[0])); err2 == nil {
				path, err = filepath.Join(dir, args[0]), nil
			}
		}
	}
	if err != nil {
		t.Fatalf("%s is not installed (apt-get install dosfstools exfatprogs): %v", args[0], err)
	}
	out, err := exec.Command(path, args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestLayouts (issue 46): cards of 2, 16, 64 and 256 GiB (sparse files)
// laid out as the SD Association's formatter lays them out pass fsck.fat
// and fsck.exfat, with their partition, FAT end and first cluster on the
// erase unit, and the label; go-diskfs reads the FAT32 ones and writes a
// file into them.
func TestLayouts(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		capacity  int64
		eraseUnit int64
		label     string
		fs        string
		cluster   int64
		unit      int64
	}{
		{2 << 30, 0, "PICS", FAT32, 16 << 10, 4 << 20},
		{16 << 30, 0, "Camera 1", FAT32, 32 << 10, 4 << 20},
		{16 << 30, 8 << 20, "", FAT32, 32 << 10, 8 << 20},
		{64 << 30, 0, "Photos été", ExFAT, 128 << 10, 16 << 20},
		{256 << 30, 0, "", ExFAT, 128 << 10, 32 << 20},
		{31_914_983_424, 0, "SDHC", FAT32, 32 << 10, 4 << 20}, // a "32 GB" card
	} {
		t.Run(fmt.Sprintf("%s %d GiB", tc.fs, tc.capacity>>30), func(t *testing.T) {
			l, err := New(Options{Capacity: tc.capacity, BlockSize: 512, EraseUnit: tc.eraseUnit, Label: tc.label, Serial: 0x1234abcd, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if l.FS != tc.fs || l.ClusterSize != tc.cluster || l.EraseUnit != tc.unit {
				t.Errorf("%s, %d-byte clusters, %d-byte unit; want %s, %d, %d", l.FS, l.ClusterSize, l.EraseUnit, tc.fs, tc.cluster, tc.unit)
			}
			if l.PartitionStart%tc.unit != 0 || l.DataStart%tc.unit != 0 || l.FATStart%sector != 0 {
				t.Errorf("partition at %d, data at %d: not on the %d-byte erase unit", l.PartitionStart, l.DataStart, tc.unit)
			}
			if l.Size() > 300<<20 {
				t.Errorf("the layout writes %d bytes", l.Size())
			}
			_, part := writeLayout(t, l, tc.capacity)
			if tc.fs == FAT32 {
				out := fsck(t, "fsck.fat", "-n", "-v", part)
				if strings.Contains(out, "differ") || strings.Contains(strings.ToLower(out), "warning") {
					t.Errorf("fsck.fat:\n%s", out)
				}
				checkWithDiskfs(t, part, l)
			} else {
				fsck(t, "fsck.exfat", "-n", "-v", part)
			}
		})
	}
}

// checkWithDiskfs opens the FAT32 with go-diskfs, reads its label and
// writes a file into it, as a camera or a desktop will.
func checkWithDiskfs(t *testing.T, part string, l *Layout) {
	t.Helper()
	b, err := file.OpenFromPath(part, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fs, err := fat32.Read(b, l.PartitionSize, 0, 512)
	if err != nil {
		t.Fatalf("go-diskfs: %v", err)
	}
	want := l.Label
	if got := strings.TrimSpace(fs.Label()); got != want {
		t.Errorf("label %q, want %q", got, want)
	}
	f, err := fs.OpenFile("/DCIM.TXT", os.O_CREATE|os.O_RDWR)
	if err != nil {
		t.Fatalf("go-diskfs: create a file: %v", err)
	}
	if _, err := f.Write([]byte("a photo")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// go-diskfs leaves FSInfo's free count as it was, which fsck.fat
	// would report: the file is read back instead.
	again, err := fat32.Read(b, l.PartitionSize, 0, 512)
	if err != nil {
		t.Fatal(err)
	}
	f, err = again.OpenFile("/DCIM.TXT", os.O_RDONLY)
	if err != nil {
		t.Fatalf("go-diskfs: the file written: %v", err)
	}
	if got, _ := io.ReadAll(f); string(got) != "a photo" {
		t.Errorf("the file reads %q", got)
	}
}

// TestLabels: what each file system takes as a label, and what not.
func TestLabels(t *testing.T) {
	for _, tc := range []struct {
		fs, label, want string
		ok              bool
	}{
		{FAT32, "pics", "PICS", true},
		{FAT32, "A B-C_1", "A B-C_1", true},
		{FAT32, "TWELVE CHARS", "", false},
		{FAT32, "a.b", "", false},
		{FAT32, "été", "", false},
		{ExFAT, "Photos été", "Photos été", true},
		{ExFAT, "a/b", "", false},
	} {
		got, err := checkLabel(tc.fs, tc.label)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s %q: %q, %v; want %q, ok %v", tc.fs, tc.label, got, err, tc.want, tc.ok)
		}
	}
}

// TestUpcaseTable reads the up-case table as Linux's exfat does
// (exfat_load_upcase_table): entry by entry, whole sectors, until the
// index passes 0xFFFF, the identity tested before the run marker. The
// checksum of what it read must be the one the root directory states, and
// the mappings Unicode's.
func TestUpcaseTable(t *testing.T) {
	table := upcaseTable()
	sectors := make([]byte, (len(table)+511)/512*512) // the zeros after it are read too
	copy(sectors, table)
	var up [0x10000]uint16
	index, skip, sum := 0, false, uint32(0)
	for i := 0; i+1 < len(sectors) && index <= 0xFFFF; i += 2 {
		u := uint16(sectors[i]) | uint16(sectors[i+1])<<8
		sum = exfatChecksum(sum, sectors[i:i+2], nil)
		switch {
		case skip:
			index += int(u)
			skip = false
		case int(u) == index:
			up[index] = u
			index++
		case u == 0xFFFF:
			skip = true
		default:
			up[index] = u
			index++
		}
	}
	if index < 0xFFFF || sum != exfatChecksum(0, table, nil) {
		t.Fatalf("read to index %#x, checksum %#x; the table's is %#x", index, sum, exfatChecksum(0, table, nil))
	}
	for c, want := range map[int]uint16{'a': 'A', 'z': 'Z', 0xe9: 0xc9, 0x3b1: 0x391, 0x430: 0x410} {
		if up[c] != want {
			t.Errorf("%#x maps to %#x, want %#x", c, up[c], want)
		}
	}
}
