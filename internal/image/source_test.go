package image

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// srcOpen opens data through the three ways in: a named file, a seekable
// reader, and a pipe-like stream that hides io.ReaderAt.
func srcOpen(t testing.TB, data []byte, how string) (*Source, error) {
	t.Helper()
	switch how {
	case "file":
		p := filepath.Join(t.TempDir(), "image.bin")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return OpenFile(p)
	case "seekable":
		return New(bytes.NewReader(data), int64(len(data)))
	case "stream":
		return New(struct{ io.Reader }{bytes.NewReader(data)}, -1)
	}
	t.Fatalf("unknown way in %q", how)
	return nil, nil
}

var srcWaysIn = []string{"file", "seekable", "stream"}

// srcDecode opens and reads everything, returning the first error from
// either step.
func srcDecode(t testing.TB, data []byte, how string) (*Source, []byte, error) {
	t.Helper()
	s, err := srcOpen(t, data, how)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	out, err := io.ReadAll(s)
	return s, out, err
}

// srcZip builds a zip with the given entries (name -> data; a name ending
// in "/" is a directory), each stored or deflated.
func srcZip(t testing.TB, method uint16, entries ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for i := 0; i < len(entries); i += 2 {
		name, data := entries[i].(string), entries[i+1].([]byte)
		f, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSourceRoundTrip decodes every format byte-exact, for sizes that are
// and are not multiples of 512, through every way in.
func TestSourceRoundTrip(t *testing.T) {
	sizes := []int64{1, 511, 513, 3*4096 + 7, 1<<20 + 1}
	type tc struct {
		name   string
		format Format
		enc    func(t *testing.T, data []byte) []byte
	}
	var cases []tc
	cases = append(cases, tc{"raw", FormatRaw, func(t *testing.T, d []byte) []byte { return d }})
	for _, c := range srcCodecs {
		cases = append(cases, tc{c.format.String(), c.format, func(t *testing.T, d []byte) []byte { return srcCompress(t, c, d) }})
	}
	cases = append(cases,
		tc{"zip-deflate", FormatZip, func(t *testing.T, d []byte) []byte { return srcZip(t, zip.Deflate, "os.img", d) }},
		tc{"zip-store", FormatZip, func(t *testing.T, d []byte) []byte { return srcZip(t, zip.Store, "os.img", d) }},
	)
	for _, c := range cases {
		for _, size := range sizes {
			img := genOSImage(size, uint64(size))
			if c.format == FormatRaw {
				img[0] = 0xeb // a boot-sector jump, so a 1-byte image is not a signature prefix
			}
			t.Run(c.name+"/"+itoa(size), func(t *testing.T) {
				enc := c.enc(t, img)
				for _, how := range srcWaysIn {
					if how == "stream" && c.format == FormatZip {
						continue // refused; see TestSourceZipEntries
					}
					s, out, err := srcDecode(t, enc, how)
					if err != nil {
						t.Fatalf("%s: %v", how, err)
					}
					if s.Format != c.format {
						t.Errorf("%s: format %v, want %v", how, s.Format, c.format)
					}
					if sha256.Sum256(out) != sha256.Sum256(img) {
						t.Errorf("%s: decoded %d bytes, SHA-256 differs from the %d-byte image", how, len(out), len(img))
					}
				}
			})
		}
	}
}

func itoa(n int64) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// TestSourceMulti decodes the concatenations real tools produce: gzip
// members, xz streams with padding, zstd frames around a skippable frame,
// concatenated bzip2 streams.
func TestSourceMulti(t *testing.T) {
	a, b := genOSImage(300_001, 1), genOSImage(70_003, 2)
	want := srcConcat(a, b)
	codec := func(f Format) srcCodec {
		for _, c := range srcCodecs {
			if c.format == f {
				return c
			}
		}
		t.Fatalf("no codec for %v", f)
		return srcCodec{}
	}
	pad := make([]byte, 8)
	cases := []struct {
		name      string
		build     func(t *testing.T) []byte
		size      int64
		exact     bool
		sizeKnown bool
	}{
		{"gzip-2-members", func(t *testing.T) []byte {
			return srcConcat(srcCompress(t, codec(FormatGzip), a), srcCompress(t, codec(FormatGzip), b))
		}, 0, false, false},
		{"xz-2-streams-padding", func(t *testing.T) []byte {
			return srcConcat(srcCompress(t, codec(FormatXz), a), pad, srcCompress(t, codec(FormatXz), b), pad[:4])
		}, int64(len(want)), true, true},
		{"xz-multiblock", func(t *testing.T) []byte {
			srcHaveCLI(t, "xz")
			return srcRunCLI(t, want, "xz", "-c", "-1", "-T2", "--block-size=65536")
		}, int64(len(want)), true, true},
		{"zstd-frames-skippable", func(t *testing.T) []byte {
			return srcConcat(srcSkippableFrame([]byte("seekable index")), srcCompress(t, codec(FormatZstd), a),
				srcSkippableFrame(nil), srcCompress(t, codec(FormatZstd), b))
		}, int64(len(want)), true, true},
		{"zstd-no-content-size", func(t *testing.T) []byte {
			srcHaveCLI(t, "zstd")
			// From a pipe the CLI cannot record the frame content size.
			return srcPipeCLI(t, want, "zstd", "-c", "-q")
		}, -1, false, true},
		{"bzip2-2-streams", func(t *testing.T) []byte {
			return srcConcat(srcCompress(t, codec(FormatBzip2), a), srcCompress(t, codec(FormatBzip2), b))
		}, -1, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			enc := c.build(t)
			for _, how := range srcWaysIn {
				s, out, err := srcDecode(t, enc, how)
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if !bytes.Equal(out, want) {
					t.Fatalf("%s: decoded %d bytes, want %d identical", how, len(out), len(want))
				}
				if how == "stream" || !c.sizeKnown {
					if s.SizeExact {
						t.Errorf("%s: size %d claimed exact", how, s.Size)
					}
					continue
				}
				if s.Size != c.size || s.SizeExact != c.exact {
					t.Errorf("%s: size %d exact %v, want %d exact %v", how, s.Size, s.SizeExact, c.size, c.exact)
				}
			}
		})
	}
}

// TestSourceSize is the size-detection table: what each container admits
// about the decoded size, when read from a seekable input.
func TestSourceSize(t *testing.T) {
	img := genOSImage(200_000+3, 7)
	n := int64(len(img))
	byFormat := map[Format]srcCodec{}
	for _, c := range srcCodecs {
		byFormat[c.format] = c
	}
	cases := []struct {
		name  string
		build func(t *testing.T) []byte
		size  int64
		exact bool
	}{
		{"raw", func(t *testing.T) []byte { return img }, n, true},
		{"gzip-isize-hint", func(t *testing.T) []byte { return srcCompress(t, byFormat[FormatGzip], img) }, n, false},
		{"xz-index", func(t *testing.T) []byte { return srcCompress(t, byFormat[FormatXz], img) }, n, true},
		{"xz-go-encoder", func(t *testing.T) []byte { b, _ := srcXzGo(img); return b }, n, true},
		{"zstd-fcs", func(t *testing.T) []byte { return srcCompress(t, byFormat[FormatZstd], img) }, n, true},
		{"zstd-go-encoder", func(t *testing.T) []byte { b, _ := srcZstdGo(img); return b }, n, true},
		{"bzip2-unknown", func(t *testing.T) []byte { return srcCompress(t, byFormat[FormatBzip2], img) }, -1, false},
		{"zip-entry", func(t *testing.T) []byte { return srcZip(t, zip.Deflate, "a.img", img) }, n, true},
		{"xz-broken-index", func(t *testing.T) []byte {
			b := bytes.Clone(srcCompress(t, byFormat[FormatXz], img))
			b[len(b)-14] ^= 0xff // inside the index: its CRC fails, the size is unknown
			return b
		}, -1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := srcOpen(t, c.build(t), "seekable")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Size != c.size || s.SizeExact != c.exact {
				t.Errorf("Size %d exact %v, want %d exact %v", s.Size, s.SizeExact, c.size, c.exact)
			}
		})
	}
}

// TestSourceZipEntries covers choosing the image inside a zip.
func TestSourceZipEntries(t *testing.T) {
	img := genOSImage(100_000, 3)
	cases := []struct {
		name    string
		zip     []byte
		how     string
		entry   string
		errHas  []string
		errNone bool
	}{
		{"one-with-metadata", srcZip(t, zip.Deflate, "dir/", []byte{}, "__MACOSX/._os.img", []byte("xx"),
			"dir/os.img", img, "README.txt", []byte("hello"), "os.img.sha256", []byte("abc")), "seekable", "dir/os.img", nil, true},
		{"two-images", srcZip(t, zip.Deflate, "a.img", img, "b.img", img[:5000]), "seekable", "",
			[]string{`"a.img"`, `"b.img"`, "2 candidate"}, false},
		{"no-image", srcZip(t, zip.Store, "notes.txt", []byte("x")), "seekable", "", []string{"no image"}, false},
		{"empty-archive", srcZip(t, zip.Store), "seekable", "", []string{"no image"}, false},
		{"from-pipe", srcZip(t, zip.Store, "a.img", img), "stream", "", []string{"pipe cannot provide"}, false},
		{"nested-xz", srcZip(t, zip.Store, "a.img.xz", srcConcat(xzMagicForTest, img)), "seekable", "",
			[]string{"xz-compressed"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := srcOpen(t, c.zip, c.how)
			if c.errNone {
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				out, err := io.ReadAll(s)
				if err != nil || !bytes.Equal(out, img) || s.Entry != c.entry {
					t.Fatalf("entry %q, %d bytes, err %v; want %q, %d bytes", s.Entry, len(out), err, c.entry, len(img))
				}
				return
			}
			if err == nil {
				s.Close()
				t.Fatal("opened; want an error")
			}
			for _, want := range c.errHas {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

var xzMagicForTest = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}

// TestSourceRefusesContainers checks that recognised but unsupported
// containers are refused, named, not written raw.
func TestSourceRefusesContainers(t *testing.T) {
	tarHdr := make([]byte, 1024)
	copy(tarHdr, "os.img")
	copy(tarHdr[257:], "ustar\x0000")
	lzma := srcConcat([]byte{0x5d, 0, 0, 0x80, 0}, bytes.Repeat([]byte{0xff}, 8), make([]byte, 100))
	cases := []struct {
		name, data, want string
	}{
		{"rar", "Rar!\x1a\x07\x01\x00rest", "RAR archive"},
		{"lzip", "LZIP\x01rest", "lzip stream"},
		{"lzma", string(lzma), "lzma (lzma_alone) stream"},
		{"qcow2", "QFI\xfb\x00\x00\x00\x03", "qcow2 disk image"},
		{"empty", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := srcOpen(t, []byte(c.data), "seekable")
			if err == nil {
				s.Close()
				t.Fatal("opened; want a refusal")
			}
			var se *Error
			switch {
			case !errors.As(err, &se):
				t.Errorf("refusal %v is not an *Error", err)
			case c.want == "" && se.Kind != ErrEmpty:
				t.Errorf("refusal %v is of kind %v, want %v", err, se.Kind, ErrEmpty)
			case c.want != "" && (se.Kind != ErrUnsupported || se.Container != c.want || !strings.Contains(err.Error(), c.want)):
				t.Errorf("refusal %v is of kind %v naming %q, want %v naming %q", err, se.Kind, se.Container, ErrUnsupported, c.want)
			case !slices.Contains(UnsupportedContainers(), se.Container) && se.Container != "":
				t.Errorf("container %q is not among UnsupportedContainers", se.Container)
			}
		})
	}
}

// TestSourceRefusesTarInTar refuses a tar whose one member is a tar: the
// image is inside it, not it.
func TestSourceRefusesTarInTar(t *testing.T) {
	inner := srcTarOf(t, "os.img", genOSImage(4096, 1))
	gz, err := srcGzipGo(srcTarOf(t, "inner.tar", inner))
	if err != nil {
		t.Fatal(err)
	}
	_, err = srcOpen(t, gz, "stream")
	if !errors.Is(err, ErrNotAnImage) || !strings.Contains(err.Error(), "the tar archive holds a tar archive") {
		t.Fatalf("error %v; want a tar in a tar refused", err)
	}
}

// TestSourceZipAfterPrefix: a zip after a prefix (a self-extractor's
// program) is a zip, as archive/zip and unzip read it, whether its offsets
// count from the archive (cat stub archive.zip) or from the file (zip -A);
// data that starts like a disk image stays raw even when a zip ends it.
func TestSourceZipAfterPrefix(t *testing.T) {
	img := genOSImage(200_000, 8)
	exe := append([]byte("MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff"), bytes.Repeat([]byte("stub code "), 300)...)
	script := []byte("#!/bin/sh\nexec unzip -o \"$0\" -d /tmp/img\n")
	elf := append([]byte("\x7fELF\x02\x01\x01\x00"), bytes.Repeat([]byte{0x90, 0x48, 0x31, 0xc0}, 2000)...)
	disk := append([]byte("\xeb\x63\x90"), genOSImage(64<<10, 2)...)
	disk[510], disk[511] = 0x55, 0xaa
	// zipAt builds a zip of img after prefix; absolute offsets as zip -A
	// writes them when abs.
	zipAt := func(prefix []byte, method uint16, abs bool, comment string) []byte {
		var b bytes.Buffer
		b.Write(prefix)
		w := zip.NewWriter(&b)
		if abs {
			w.SetOffset(int64(len(prefix)))
		}
		f, err := w.CreateHeader(&zip.FileHeader{Name: "os.img", Method: method})
		if err != nil {
			t.Fatal(err)
		}
		f.Write(img)
		w.SetComment(comment)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if !abs { // cat stub archive.zip: the offsets count from the archive
			return srcConcat(prefix, b.Bytes()[len(prefix):])
		}
		return b.Bytes()
	}
	badLocal := zipAt(exe, zip.Store, false, "")
	copy(badLocal[len(exe):], "PK\x07\x08") // the first local header's signature
	for _, tc := range []struct {
		name string
		data []byte
		zip  bool
	}{
		{"exe stub, deflate", zipAt(exe, zip.Deflate, false, ""), true},
		{"shell script, stored", zipAt(script, zip.Store, false, ""), true},
		{"exe stub, offsets from the file (zip -A)", zipAt(exe, zip.Deflate, true, ""), true},
		{"ELF stub, archive comment", zipAt(elf, zip.Deflate, false, "self-extracting image"), true},
		{"disk image ending in a zip", zipAt(disk, zip.Store, false, ""), false},
		{"zeros, then a zip", zipAt(make([]byte, 4096), zip.Store, true, ""), false},
		{"exe stub, zip, trailing bytes", srcConcat(zipAt(exe, zip.Store, false, ""), []byte("trailer")), false},
		{"exe stub, zip without its first local header", badLocal, false},
	} {
		for _, how := range []string{"file", "seekable"} {
			s, out, err := srcDecode(t, tc.data, how)
			switch {
			case err != nil:
				t.Errorf("%s (%s): %v", tc.name, how, err)
			case tc.zip && (s.Format != FormatZip || s.Entry != "os.img" || !bytes.Equal(out, img)):
				t.Errorf("%s (%s): format %v entry %q, %d bytes; want the zip's image", tc.name, how, s.Format, s.Entry, len(out))
			case !tc.zip && (s.Format != FormatRaw || !bytes.Equal(out, tc.data)):
				t.Errorf("%s (%s): format %v, %d bytes; want it raw", tc.name, how, s.Format, len(out))
			}
		}
	}
	// Named .zip, it is what its name says.
	p := filepath.Join(t.TempDir(), "image-sfx.zip")
	if err := os.WriteFile(p, zipAt(exe, zip.Deflate, false, ""), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFile(p)
	if err != nil {
		t.Fatalf("Open %s: %v", p, err)
	}
	s.Close()
}

// TestOpenStreamReadAhead: Options.ReadAhead is called once for a stream
// whose decoder reads on the caller's goroutine, before the decoder reads
// past the sniffed bytes, and never for a raw stream (read straight into
// the engine's buffers) or zstd and xz (which read ahead themselves).
func TestOpenStreamReadAhead(t *testing.T) {
	img := genOSImage(1<<20, 3)
	gz, err := srcGzipGo(img)
	if err != nil {
		t.Fatal(err)
	}
	xz, err := srcXzGo(img)
	if err != nil {
		t.Fatal(err)
	}
	zst, err := srcZstdGo(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		input []byte
		calls int
	}{
		{"raw", img, 0},
		{"gzip", gz, 1},
		{"xz", xz, 0},
		{"zstd", zst, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &countReader{r: bytes.NewReader(tc.input)}
			calls, readBefore := 0, int64(-1)
			s, err := OpenStream(r, int64(len(tc.input)), "", Options{ReadAhead: func() { calls++; readBefore = r.n }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, err := io.ReadAll(s)
			if err != nil || !bytes.Equal(got, img) {
				t.Fatalf("decoded %d bytes, %v", len(got), err)
			}
			if calls != tc.calls {
				t.Errorf("ReadAhead called %d times, want %d", calls, tc.calls)
			}
			if sniffed := min(sniffLen, int64(len(tc.input))); calls > 0 && readBefore != sniffed {
				t.Errorf("ReadAhead called after %d bytes were read, want the %d sniffed", readBefore, sniffed)
			}
		})
	}
}

// countReader counts what was read of r.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
