package customize

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// memVol is a disk in memory.
type memVol []byte

func (m memVol) Size() int64 { return int64(len(m)) }
func (m memVol) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(p, m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (m memVol) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > int64(len(m)) {
		return 0, io.ErrShortWrite
	}
	return copy(m[off:], p), nil
}

// partStart is where test disks put their boot partition: 1 MiB, as
// Raspberry Pi OS images put theirs at 4 MiB.
const partStart = 1 << 20

// fatSpec is a boot partition made by mkfs.fat.
type fatSpec struct {
	fat      string            // "12", "16", "32"
	kib      int               // partition size
	cluster  int               // sectors per cluster, 0: mkfs's choice
	rootDir  int               // root directory entries (FAT12/16), 0: mkfs's choice
	files    map[string]string // name -> content, copied in with mcopy
	fragment int               // files of this many KiB written then every other one deleted
	fill     bool              // a file that takes every free cluster
}

// run runs a command of dosfstools or mtools and fails the test with
// its output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	// mtools refuses the small FAT32 volumes mkfs.fat makes for tests
	// (fewer clusters than FAT32 is meant for); fsck.fat and the kernel
	// take them.
	cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// makeDisk is a disk (MBR, one FAT partition made by mkfs.fat at
// partStart) with spec's files.
func makeDisk(t *testing.T, spec fatSpec) memVol {
	t.Helper()
	dir := t.TempDir()
	img := filepath.Join(dir, "part.img")
	args := []string{"-C", "-F", spec.fat, "-n", "bootfs"}
	if spec.cluster > 0 {
		args = append(args, "-s", itoa(spec.cluster))
	}
	if spec.rootDir > 0 {
		args = append(args, "-r", itoa(spec.rootDir))
	}
	run(t, "mkfs.fat", append(args, img, itoa(spec.kib))...)
	put := func(name string, data []byte) {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, "mcopy", "-o", "-i", img, p, "::"+name)
	}
	for name, content := range spec.files {
		put(name, []byte(content))
	}
	if spec.fragment > 0 {
		for i := range 8 {
			put("frag"+itoa(i), bytes.Repeat([]byte{byte('a' + i)}, spec.fragment<<10))
		}
		for i := 0; i < 8; i += 2 {
			run(t, "mdel", "-i", img, "::frag"+itoa(i))
		}
	}
	if spec.fill {
		free := freeBytes(t, img)
		put("filler", make([]byte, free))
	}
	part, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	disk := make(memVol, partStart+len(part)+partStart)
	copy(disk[partStart:], part)
	e := disk[446:]
	e[4] = 0x0c
	binary.LittleEndian.PutUint32(e[8:], partStart/512)
	binary.LittleEndian.PutUint32(e[12:], uint32(len(part)/512))
	disk[510], disk[511] = 0x55, 0xAA
	return disk
}

// freeBytes is what mdir says is free on img.
func freeBytes(t *testing.T, img string) int {
	for _, l := range strings.Split(run(t, "mdir", "-i", img, "::"), "\n") {
		if i := strings.Index(l, "bytes free"); i > 0 {
			return atoi(l[:i])
		}
	}
	t.Fatal("mdir said nothing of free space")
	return 0
}

// partition writes the disk's boot partition to a file for fsck.fat and
// mtools.
func partition(t *testing.T, disk memVol) string {
	t.Helper()
	n := binary.LittleEndian.Uint32(disk[446+12:])
	img := filepath.Join(t.TempDir(), "part.img")
	if err := os.WriteFile(img, disk[partStart:partStart+int64(n)*512], 0o644); err != nil {
		t.Fatal(err)
	}
	return img
}

// checkFS runs fsck.fat -n (it exits non-zero on any error it finds) and
// returns the files as mtools reads them.
func checkFS(t *testing.T, disk memVol, names ...string) map[string]string {
	t.Helper()
	img := partition(t, disk)
	run(t, "fsck.fat", "-n", img)
	got := map[string]string{}
	for _, n := range names {
		got[n] = run(t, "mtype", "-i", img, "::"+n)
	}
	return got
}

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(s string) int {
	n := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			n = n*10 + int(r-'0')
		}
	}
	return n
}

// Public keys made by ssh-keygen for the tests (their private halves
// thrown away).
const (
	keyEd25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq8MG/N4le2dfNS0JOAMmvgJDtUxi25HmT+0oiEJQjj"
	keyECDSA   = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBHQykjD7l4rdDs6GvogaBb99DrnAqafypNDYd4cE4y1BDUjhx+mmckgixjy9G5XtDF2/GRy0Mf6GuFyjO+L+3aU="
)
