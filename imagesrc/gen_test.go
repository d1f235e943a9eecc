package imagesrc

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// genOSImage returns size deterministic bytes shaped like an OS image: runs
// of zeros (unused blocks, about 30%), text (configs, scripts, docs),
// structured binary (code, tables) and incompressible data (already
// compressed files), in regions of 4 KiB to 1 MiB. Decoder speed depends on
// this mix, so benchmarks on random or all-zero data would mislead.
func genOSImage(size int64, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]byte, 0, size)
	words := []string{"the", "kernel", "module", "usr", "lib", "systemd", "service", "enable", "config",
		"true", "false", "root", "boot", "firmware", "device", "mount", "options", "=", "#", "/etc/",
		"ExecStart", "Description", "0x1f", "return", "if", "then", "fi", "echo", "$PATH", "{", "}"}
	for int64(len(out)) < size {
		n := int(min(size-int64(len(out)), int64(4096<<rng.IntN(9))))
		switch k := rng.IntN(100); {
		case k < 30: // zeros
			out = append(out, make([]byte, n)...)
		case k < 55: // text
			end := len(out) + n
			for len(out) < end {
				w := words[rng.IntN(len(words))]
				if rng.IntN(12) == 0 {
					w += "\n"
				} else {
					w += " "
				}
				out = append(out, w[:min(len(w), end-len(out))]...)
			}
		case k < 85: // structured binary: records with counters and small fields
			end := len(out) + n
			var rec [16]byte
			for i := uint32(0); len(out) < end; i++ {
				binary.LittleEndian.PutUint32(rec[0:], i)
				binary.LittleEndian.PutUint32(rec[4:], uint32(rng.IntN(256)))
				binary.LittleEndian.PutUint64(rec[8:], uint64(i)*0x40+0x8000)
				out = append(out, rec[:min(len(rec), end-len(out))]...)
			}
		default: // incompressible
			start := len(out)
			out = append(out, make([]byte, n)...)
			for i := start; i < len(out); i += 8 {
				var w [8]byte
				binary.LittleEndian.PutUint64(w[:], rng.Uint64())
				copy(out[i:], w[:])
			}
		}
	}
	return out
}

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
