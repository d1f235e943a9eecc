package image

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The lz4, 7z and tar tests decode files made at test time by the
// formats' own tools (Debian's lz4, 7zip and tar: .ci/run installs them),
// as a user's downloads are made: a test without them fails, it does not
// skip.

// srcTool runs a tool in dir and fails the test when it is missing or
// fails.
func srcTool(t *testing.T, dir string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(args[0]); err != nil {
		t.Fatalf("%s is not installed (Debian: lz4, 7zip, tar; .ci/run installs them): %v", args[0], err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

// srcArchive is an image packed by a tool: make runs in a directory that
// holds os.img (the image) and readme.txt, and leaves out.
type srcArchive struct {
	name   string
	format Format
	make   [][]string
	// exact: the decoded size is known before decoding.
	exact bool
	// checksum: the container carries a checksum of the data.
	checksum bool
	entry    string
}

var srcArchives = []srcArchive{
	{"lz4", FormatLz4, [][]string{{"lz4", "-q", "-9", "os.img", "out"}}, false, true, ""},
	{"lz4 --content-size", FormatLz4, [][]string{{"lz4", "-q", "--content-size", "os.img", "out"}}, true, true, ""},
	{"lz4 -B4 --no-frame-crc -BD", FormatLz4, [][]string{{"lz4", "-q", "-B4", "-BD", "--no-frame-crc", "os.img", "out"}}, false, false, ""},
	{"lz4 -l (legacy)", FormatLz4, [][]string{{"lz4", "-q", "-l", "os.img", "out"}}, false, false, ""},
	{"lz4, two frames", FormatLz4, [][]string{
		{"sh", "-c", "head -c 300000 os.img > a && tail -c +300001 os.img > b && lz4 -q --content-size a a.lz4 && lz4 -q --content-size b b.lz4 && cat a.lz4 b.lz4 > out"},
	}, true, true, ""},
	{"7z LZMA2", Format7z, [][]string{{"7zz", "a", "-bd", "-t7z", "-m0=lzma2", "-mx=5", "out", "os.img"}}, true, true, "os.img"},
	{"7z LZMA, solid, with a readme", Format7z, [][]string{{"7zz", "a", "-bd", "-t7z", "-m0=lzma", "-ms=on", "out", "readme.txt", "os.img"}}, true, true, "os.img"},
	{"7z in a folder", Format7z, [][]string{{"mkdir", "d"}, {"cp", "os.img", "readme.txt", "d/"}, {"7zz", "a", "-bd", "-t7z", "out", "d"}}, true, true, "d/os.img"},
	{"tar", FormatTar, [][]string{{"tar", "-cf", "out", "readme.txt", "os.img"}}, true, false, "os.img"},
	{"tar --format=posix", FormatTar, [][]string{{"tar", "--format=posix", "-cf", "out", "os.img"}}, true, false, "os.img"},
	{"tar -S (sparse)", FormatTar, [][]string{{"tar", "-S", "-cf", "out", "os.img"}}, true, false, "os.img"},
	{"tar.gz", FormatGzip, [][]string{{"tar", "-czf", "out", "os.img", "readme.txt"}}, true, true, "os.img"},
	{"tar.xz", FormatXz, [][]string{{"tar", "-cJf", "out", "os.img"}}, true, true, "os.img"},
	{"tar.zst", FormatZstd, [][]string{{"sh", "-c", "tar -cf - os.img | zstd -q -c > out"}}, true, true, "os.img"},
	{"tar.lz4", FormatLz4, [][]string{{"sh", "-c", "tar -cf - os.img | lz4 -q -c > out"}}, true, true, "os.img"},
	{"tar.bz2", FormatBzip2, [][]string{{"tar", "-cjf", "out", "os.img"}}, true, true, "os.img"},
	{"tar in a 7z", Format7z, [][]string{{"tar", "-cf", "os.tar", "os.img"}, {"7zz", "a", "-bd", "-t7z", "out", "os.tar"}}, true, true, "os.tar/os.img"},
}

// srcPack makes a's archive of img.
func srcPack(t *testing.T, a srcArchive, img []byte) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "os.img"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "readme.txt"), []byte("the image\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range a.make {
		srcTool(t, dir, args...)
	}
	out := filepath.Join(dir, "out")
	if a.format == Format7z {
		out += ".7z" // 7zz adds it
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// srcSparseImage is an image with a long run of zeros, which tar -S keeps
// as a hole.
func srcSparseImage() []byte {
	img := genOSImage(1<<20+4096+7, 5)
	clear(img[200<<10 : 900<<10])
	return img
}

// TestArchivesRoundTrip decodes every archive its tool made, byte-exact,
// from a file, a seekable reader and a stream, with what the container
// says of the size, the checksum and the member.
func TestArchivesRoundTrip(t *testing.T) {
	img := srcSparseImage()
	for _, a := range srcArchives {
		t.Run(a.name, func(t *testing.T) {
			data := srcPack(t, a, img)
			for _, how := range srcWaysIn {
				s, out, err := srcDecode(t, data, how)
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if !bytes.Equal(out, img) {
					t.Fatalf("%s: decoded %d bytes, not the image's %d", how, len(out), len(img))
				}
				if s.Format != a.format || s.Entry != a.entry || s.HasChecksum != a.checksum {
					t.Errorf("%s: format %v entry %q checksum %v; want %v %q %v", how, s.Format, s.Entry, s.HasChecksum, a.format, a.entry, a.checksum)
				}
				// A tar's member and a 7z's are sized by their headers, a
				// stream's too; lz4 only when a file's frames state it.
				exact := a.exact && (how != "stream" || a.format != FormatLz4)
				if exact && (!s.SizeExact || s.Size != int64(len(img))) {
					t.Errorf("%s: size %d exact %v; want %d exact", how, s.Size, s.SizeExact, len(img))
				}
				if s.Format == Format7z && (how == "stream") != (s.Spooled != "") {
					t.Errorf("%s: spooled to %q", how, s.Spooled)
				}
				if s.Spooled != "" {
					if _, err := os.Stat(s.Spooled); err == nil {
						t.Errorf("the spool file %s is still there", s.Spooled)
					}
				}
			}
		})
	}
}

// TestArchivesSizeBeforeDecoding: the decoded size of a 7z's member and a
// tar's is known when the source is opened, before anything is written
// (a card too small is refused first), from a stream too.
func TestArchivesSizeBeforeDecoding(t *testing.T) {
	img := genOSImage(256<<10, 2)
	for _, a := range srcArchives {
		if !a.exact || a.format == FormatLz4 && a.entry == "" {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			s, err := srcOpen(t, srcPack(t, a, img), "stream")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !s.SizeExact || s.Size != int64(len(img)) {
				t.Errorf("size %d exact %v; want %d", s.Size, s.SizeExact, len(img))
			}
		})
	}
}

// TestArchivesDamaged: every archive cut short or with a byte changed
// fails with an *Error of class Image before its end is delivered as the
// end of the image, so the write's first transfer (written after the
// stream's end) is never written. A container without a checksum (a plain
// tar, lz4 without its frame checksum) cannot tell a changed byte in the
// image's data; only in its structure.
func TestArchivesDamaged(t *testing.T) {
	img := genOSImage(300<<10, 4)
	for _, a := range srcArchives {
		t.Run(a.name, func(t *testing.T) {
			data := srcPack(t, a, img)
			var damaged []struct {
				what string
				data []byte
			}
			for _, cut := range []int{len(data) / 3, len(data) * 2 / 3, len(data) - 1} {
				if a.format == FormatTar && cut >= len(data)-1024 {
					continue // only the end-of-archive zeros are cut: nothing is lost
				}
				damaged = append(damaged, struct {
					what string
					data []byte
				}{"cut at " + strconv.Itoa(cut), data[:cut]})
			}
			if a.checksum {
				flip := bytes.Clone(data)
				flip[len(data)/2] ^= 0x40
				damaged = append(damaged, struct {
					what string
					data []byte
				}{"a byte changed mid-way", flip})
			}
			for _, d := range damaged {
				for _, how := range srcWaysIn {
					_, out, err := srcDecode(t, d.data, how)
					var se *Error
					if !errors.As(err, &se) {
						t.Errorf("%s, %s: decoded %d bytes, error %v; want an *Error", d.what, how, len(out), err)
						continue
					}
					if se.Kind != ErrDamaged && se.Kind != ErrTruncated && se.Kind != ErrNotAnImage {
						t.Errorf("%s, %s: %v is of kind %v", d.what, how, err, se.Kind)
					}
				}
			}
		})
	}
}

// TestArchivesAmbiguous: an archive holding two images is refused, naming
// both; a plain tar file and a 7z before anything is read, a tar in a
// stream when its end shows the second (before the write's end, so before
// its first transfer).
func TestArchivesAmbiguous(t *testing.T) {
	img := genOSImage(64<<10, 6)
	for _, tt := range []struct {
		name string
		make [][]string
	}{
		{"7z", [][]string{{"cp", "os.img", "two.img"}, {"7zz", "a", "-bd", "-t7z", "out", "os.img", "two.img"}}},
		{"tar", [][]string{{"cp", "os.img", "two.img"}, {"tar", "-cf", "out", "os.img", "two.img"}}},
		{"tar.gz", [][]string{{"cp", "os.img", "two.img"}, {"tar", "-czf", "out", "os.img", "two.img"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := FormatTar
			if tt.name == "7z" {
				f = Format7z
			}
			data := srcPack(t, srcArchive{name: tt.name, format: f, make: tt.make}, img)
			for _, how := range srcWaysIn {
				_, _, err := srcDecode(t, data, how)
				if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), `"two.img"`) {
					t.Errorf("%s: %v; want both images named", how, err)
				}
			}
		})
	}
}

// TestSpoolRemoved: a 7z stream's temporary file is gone once the source
// is closed, and is not there while it is read (removed at once).
func TestSpoolRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	img := genOSImage(64<<10, 7)
	data := srcPack(t, srcArchives[5], img)
	s, err := New(struct{ io.Reader }{bytes.NewReader(data)}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Spooled, tmp) {
		t.Errorf("spooled to %q, not in $TMPDIR %s", s.Spooled, tmp)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("the spool file is visible while the source is open: %v", left)
	}
	if out, err := io.ReadAll(s); err != nil || !bytes.Equal(out, img) {
		t.Fatalf("read %d bytes, %v", len(out), err)
	}
	s.Close()
}
