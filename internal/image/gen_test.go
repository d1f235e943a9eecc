package image

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/usbflash/usbflash/internal/testkit/osimage"
)

// genOSImage is the OS-like test image shared with other packages'
// benchmarks; see osimage.Generate.
func genOSImage(size int64, seed uint64) []byte { return osimage.Generate(size, seed) }

// srcCodec produces one compressed format, with its CLI when installed and
// a Go encoder otherwise.
type srcCodec struct {
	format Format
	cli    []string // command and flags; the input file is appended, output is stdout
	goEnc  func(data []byte) ([]byte, error)
}

var srcCodecs = []srcCodec{
	{FormatGzip, []string{"gzip", "-c", "-n", "-6"}, srcGzipGo},
	{FormatXz, []string{"xz", "-c", "-6", "-T1"}, srcXzGo},
	{FormatZstd, []string{"zstd", "-c", "-q", "-3"}, srcZstdGo},
	{FormatBzip2, []string{"bzip2", "-c", "-9"}, nil},
}

// srcCompress compresses data as c.format; it skips the test when neither
// the CLI nor a Go encoder is available.
func srcCompress(tb testing.TB, c srcCodec, data []byte) []byte {
	tb.Helper()
	if _, err := exec.LookPath(c.cli[0]); err == nil {
		return srcRunCLI(tb, data, c.cli...)
	}
	if c.goEnc == nil {
		tb.Skipf("%s: the %s CLI is not installed and Go has no encoder", c.format, c.cli[0])
	}
	out, err := c.goEnc(data)
	if err != nil {
		tb.Fatalf("%s: Go encoder: %v", c.format, err)
	}
	return out
}

// srcRunCLI runs a compressor on data stored in a file (so that formats
// record the input size, as they do for real images) and returns stdout.
func srcRunCLI(tb testing.TB, data []byte, args ...string) []byte {
	tb.Helper()
	in := filepath.Join(tb.TempDir(), "image.img")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(args[0], append(args[1:], in)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%v: %v: %s", args, err, stderr.String())
	}
	return out
}

// srcPipeCLI runs a compressor with data on stdin.
func srcPipeCLI(tb testing.TB, data []byte, args ...string) []byte {
	tb.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%v: %v", args, err)
	}
	return out
}

func srcHaveCLI(tb testing.TB, name string) {
	tb.Helper()
	if _, err := exec.LookPath(name); err != nil {
		tb.Skipf("the %s CLI is not installed", name)
	}
}

func srcGzipGo(data []byte) ([]byte, error) {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	err := w.Close()
	return b.Bytes(), err
}

func srcXzGo(data []byte) ([]byte, error) {
	var b bytes.Buffer
	// A 1 MiB dictionary rather than 8: decoders allocate what the header
	// asks for, and cut tests decode thousands of times.
	w, err := xz.WriterConfig{DictCap: 1 << 20}.NewWriter(&b)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	err = w.Close()
	return b.Bytes(), err
}

func srcZstdGo(data []byte) ([]byte, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	return enc.EncodeAll(data, nil), nil // EncodeAll records the content size
}

// srcSkippableFrame is a zstd skippable frame carrying payload.
func srcSkippableFrame(payload []byte) []byte {
	f := binary.LittleEndian.AppendUint32(nil, 0x184D2A53)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(payload)))
	return append(f, payload...)
}

// srcConcat joins byte slices.
func srcConcat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// tempImage writes data to a new file os.img in a test's temporary
// directory and returns its path.
func tempImage(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "os.img")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
