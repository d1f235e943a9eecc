package image

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

func TestSourceErrorMessage(t *testing.T) {
	cases := []struct {
		err  *Error
		want string
	}{
		{&Error{Kind: ErrDamaged, Format: FormatXz, Offset: 123456, Decoded: 4 << 20, Err: errors.New("xz: block checksum mismatch")},
			"xz: corrupt data, found at compressed byte 123456 (after 4 MiB decoded): xz: block checksum mismatch"},
		{&Error{Kind: ErrTruncated, Format: FormatGzip, Offset: 999, Decoded: 1536, Err: io.ErrUnexpectedEOF},
			"gzip: truncated: input ends at compressed byte 999 (after 1.5 KiB decoded): unexpected EOF"},
		{&Error{Kind: ErrUnsupported, Container: "7z archive", Err: errors.New("this is a 7z archive, which usbflash does not decode")},
			"this is a 7z archive, which usbflash does not decode"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
		if !errors.Is(c.err, c.err.Err) {
			t.Errorf("%v does not unwrap to its cause", c.err)
		}
	}
}

// TestErrorsStateFacts: every refusal and every damage report Open and
// Read give states facts only, and has its Kind; the CLI gives the advice.
func TestErrorsStateFacts(t *testing.T) {
	img := genOSImage(100_000, 3)
	gz, err := srcGzipGo(img)
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := srcGzipGo(srcTarOf(t, "os.img.xz", xzMagicForTest))
	if err != nil {
		t.Fatal(err)
	}
	nested, err := srcGzipGo(gz)
	if err != nil {
		t.Fatal(err)
	}
	damaged := append([]byte(nil), gz...)
	for i := len(damaged) / 4; i < len(damaged)/2; i++ {
		damaged[i] ^= 0x55
	}
	var encrypted bytes.Buffer
	zw := zip.NewWriter(&encrypted)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "os.img", Method: zip.Store, Flags: 0x1})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(img)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, how string
		data      []byte
		kind      error
	}{
		{"encrypted zip entry", "seekable", encrypted.Bytes(), ErrUnsupportedEntry},
		{"damaged", "seekable", damaged, ErrDamaged},
		{"truncated", "seekable", gz[:len(gz)/2], ErrTruncated},
		{"7z", "seekable", []byte("7z\xbc\xaf\x27\x1c\x00\x04rest"), ErrTruncated},
		{"rar", "seekable", []byte("Rar!\x1a\x07\x01\x00rest"), ErrUnsupported},
		{"xz in a tar.gz", "stream", tgz, ErrNotAnImage},
		{"two images in a tar", "seekable", srcTarOf(t, "a.img", img, "b.img", img), ErrAmbiguous},
		{"no image in a tar", "seekable", srcTarOf(t, "notes.txt", []byte("x")), ErrEmpty},

		{"gz in gz", "stream", nested, ErrNotAnImage},
		{"empty", "seekable", nil, ErrEmpty},
		{"zip from a pipe", "stream", srcZip(t, zip.Store, "a.img", img), ErrNeedsFile},
		{"two images in a zip", "seekable", srcZip(t, zip.Store, "a.img", img, "b.img", img), ErrAmbiguous},
		{"no image in a zip", "seekable", srcZip(t, zip.Store, "notes.txt", []byte("x")), ErrEmpty},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := srcDecode(t, c.data, c.how)
			var se *Error
			if !errors.As(err, &se) || se.Kind != c.kind {
				t.Fatalf("error %v; want an *Error of kind %v", err, c.kind)
			}
			factsonly.Check(t, err.Error())
		})
	}
	for _, k := range Kinds() {
		factsonly.Check(t, (&Error{Kind: k, Err: errors.New("cause")}).Error(), k.Error())
	}
}

// srcFailingReader returns its data, then a device error instead of EOF.
type srcFailingReader struct {
	r   io.Reader
	err error
}

func (f *srcFailingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// TestSourceInputError: a failing disk under the archive is reported as an
// unreadable input with its position, not as a damaged archive.
func TestSourceInputError(t *testing.T) {
	img := genOSImage(400_000, 9)
	gz, err := srcGzipGo(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{len(gz) / 2, len(gz) - 3} {
		s, err := New(&srcFailingReader{bytes.NewReader(gz[:cut]), syscall.EIO}, -1)
		if err == nil {
			_, err = io.Copy(io.Discard, s)
			s.Close()
		}
		var se *Error
		if !errors.Is(err, syscall.EIO) || !errors.As(err, &se) || se.Kind != ErrUnreadable ||
			!strings.Contains(err.Error(), "byte "+itoa(int64(cut))) {
			t.Errorf("cut %d: error %v; want the EIO at byte %d as an unreadable input, not damage", cut, err, cut)
		}
	}
}

// TestSourceCompressedRead polls progress from another goroutine while
// reading (run with -race): it only grows and ends at the input size.
func TestSourceCompressedRead(t *testing.T) {
	img := genOSImage(2<<20, 4)
	for _, c := range srcCodecs {
		if c.goEnc == nil {
			continue
		}
		enc, err := c.goEnc(img)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(c.format.String(), func(t *testing.T) {
			s, err := New(struct{ io.Reader }{bytes.NewReader(enc)}, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			done := make(chan struct{})
			var wg sync.WaitGroup
			var backwards bool
			wg.Go(func() {
				last := int64(0)
				for {
					select {
					case <-done:
						return
					default:
					}
					n := s.CompressedRead()
					backwards = backwards || n < last
					last = n
				}
			})
			_, err = io.Copy(io.Discard, s)
			close(done)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if backwards {
				t.Error("CompressedRead went backwards")
			}
			if got := s.CompressedRead(); got != int64(len(enc)) {
				t.Errorf("CompressedRead at the end = %d, want %d", got, len(enc))
			}
		})
	}
}

func TestSourceReadAfterClose(t *testing.T) {
	s, err := New(bytes.NewReader(genOSImage(5000, 1)), 5000)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Read(make([]byte, 10)); err == nil {
		t.Error("Read after Close succeeded")
	}
}
