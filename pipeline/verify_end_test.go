package pipeline

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"
	"testing/iotest"

	"github.com/ulikunitz/xz"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// errEndCheck stands for what a decoder reports at the end of its input:
// a block check, an index or a CRC-32 that does not match.
var errEndCheck = errors.New("checksum mismatch at the end of the archive")

// endReader yields img, then what follows it: more bytes (trailing data
// past the size the archive declared), or an error instead of io.EOF (the
// decoder's last check failed).
type endReader struct {
	img   *bytes.Reader
	extra []byte
	err   error
}

func (r *endReader) Read(p []byte) (int, error) {
	if r.img.Len() > 0 {
		return r.img.Read(p)
	}
	if len(r.extra) > 0 {
		n := copy(p, r.extra)
		r.extra = r.extra[n:]
		return n, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.EOF
}

// TestVerifyReadsImageToItsEnd: when the image size is declared, what the
// card holds can match every one of those bytes while the archive is still
// bad after them: the last check, the index, a CRC-32, or data past the
// declared size. Verify, like Write, reads the image to its end and fails;
// with Only (a write that skipped transfers) the skipped tail is read too.
func TestVerifyReadsImageToItsEnd(t *testing.T) {
	const n = 5*testTransfer + 300
	img := testImage(n, 7)
	tail := []blockdev.Extent{{Off: 0, Len: testTransfer}} // Only: the tail is not compared
	for _, tc := range []struct {
		name    string
		extra   []byte
		err     error
		only    []blockdev.Extent
		want    func(error) bool
		dataEOF bool // the last bytes come with io.EOF, as an HTTP body's may
	}{
		{"clean end", nil, nil, nil, func(err error) bool { return err == nil }, false},
		{"clean end, the last bytes with io.EOF", nil, nil, nil, func(err error) bool { return err == nil }, true},
		{"trailing data, the last bytes with io.EOF", []byte{0}, nil, nil, isLonger, true},
		{"clean end, only the head compared", nil, nil, tail, func(err error) bool { return err == nil }, false},
		{"failing end check", nil, errEndCheck, nil, func(err error) bool { return errors.Is(err, errEndCheck) }, false},
		{"failing end check, only the head compared", nil, errEndCheck, tail, func(err error) bool { return errors.Is(err, errEndCheck) }, false},
		{"trailing data", []byte{0}, nil, nil, isLonger, false},
		{"trailing data, only the head compared", []byte("trailing"), nil, tail, isLonger, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := newTestDevice(t, 2048, testBS, oldByte)
			writeImage(t, dev, img)
			src := func() io.Reader {
				r := io.Reader(&endReader{img: bytes.NewReader(img), extra: tc.extra, err: tc.err})
				if tc.dataEOF {
					r = iotest.DataErrReader(r)
				}
				return r
			}
			_, err := Verify(context.Background(), dev, src(), n, VerifyOptions{TransferSize: testTransfer, Only: tc.only})
			if !tc.want(err) {
				t.Errorf("Verify: %v", err)
			}
			// Write refuses the same images.
			_, err = Write(context.Background(), newTestDevice(t, 2048, testBS, oldByte), src(),
				WriteOptions{TransferSize: testTransfer, ExpectedSize: n})
			if !tc.want(err) {
				t.Errorf("Write: %v", err)
			}
		})
	}
}

func isLonger(err error) bool {
	var se *ImageSizeError
	return errors.As(err, &se) && se.Longer
}

// TestVerifyDamagedArchiveEnd: the same through imagesrc, with archives
// that state their size and are damaged only after the last image byte: an
// xz whose last block check is wrong, a zip whose entry CRC-32 is wrong.
func TestVerifyDamagedArchiveEnd(t *testing.T) {
	img := testImage(3*testTransfer+100, 5)
	var xzb bytes.Buffer
	w, err := xz.WriterConfig{DictCap: 1 << 16, CheckSum: xz.CRC32}.NewWriter(&xzb)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(img)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var zipb bytes.Buffer
	zw := zip.NewWriter(&zipb)
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: "os.img", Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(img)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		damage func(b []byte)
	}{
		{"xz block check", xzb.Bytes(), func(b []byte) {
			// The stream footer's backward size locates the index; the
			// last block's CRC32 is the four bytes before it.
			back := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
			idx := len(b) - 12 - (back+1)*4
			b[idx-1] ^= 0xff
		}},
		{"zip entry CRC-32", zipb.Bytes(), func(b []byte) {
			// Change the CRC-32 in both the local and the central header:
			// only the data no longer matches it.
			want := binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(img))
			for i := bytes.Index(b, want); i >= 0; i = bytes.Index(b, want) {
				b[i] ^= 0xff
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(tc.data)
			tc.damage(data)
			dev := newTestDevice(t, 2048, testBS, oldByte)
			writeImage(t, dev, img)
			src, err := image.New(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if !src.SizeExact || src.Size != int64(len(img)) {
				t.Fatalf("size %d exact %v, want the archive to state %d", src.Size, src.SizeExact, len(img))
			}
			_, err = Verify(context.Background(), dev, src, src.Size, VerifyOptions{TransferSize: testTransfer})
			var se *image.Error
			if !errors.As(err, &se) || se.Kind != image.ErrDamaged {
				t.Fatalf("Verify: %v, want the image's damage", err)
			}
		})
	}
}
