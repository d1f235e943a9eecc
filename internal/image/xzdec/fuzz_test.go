package xzdec

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"testing"
)

// fuzzSeeds are small valid files covering the features the decoders
// handle, so the fuzzer starts from structure and mutates it.
func fuzzSeeds(f *testing.F) {
	if _, err := exec.LookPath("xz"); err != nil {
		f.Add([]byte{0xFD, '7', 'z', 'X', 'Z', 0})
		return
	}
	data := genImage(20000, 9, false)
	for _, args := range [][]string{
		{"-0"}, {"-6", "--check=sha256"}, {"--check=none"}, {"--check=crc32", "-T2", "--block-size=5000"},
		{"--x86", "--lzma2=preset=0"}, {"--arm64", "--lzma2=preset=0"}, {"--delta=dist=3", "--lzma2=preset=0"},
		{"--lzma2=preset=0,lc=0,lp=4,pb=0", "--block-size=7000"},
	} {
		f.Add(xzCompress(f, data, args...))
	}
	two := append(xzCompress(f, data[:300], "-0"), 0, 0, 0, 0)
	f.Add(append(two, xzCompress(f, data[300:900], "--check=crc32")...))
}

// fuzzOutputLimit bounds decoded output per input; LZMA can expand a few
// bytes into megabytes and the fuzzer should spend its time on parsing.
const fuzzOutputLimit = 16 << 20

func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, c []byte) {
		var sOut bytes.Buffer
		r, sErr := NewReader(bytes.NewReader(c))
		if sErr == nil {
			_, sErr = io.CopyN(&sOut, r, fuzzOutputLimit)
			if sErr == io.EOF {
				sErr = nil
			} else if sErr == nil {
				return // too much output to compare cheaply
			}
		}
		checkFuzzErr(t, sErr, len(c))
		pOut, pErr := fuzzDrain(NewParallelReader(context.Background(), bytes.NewReader(c), int64(len(c)),
			Options{Workers: 2, MaxInFlight: 4 << 20}))
		checkFuzzErr(t, pErr, len(c))
		// The parallel path trusts the index to split work, so it must never
		// accept what the streaming decoder rejects, and both must agree.
		if sErr == nil && pErr == nil && !bytes.Equal(sOut.Bytes(), pOut.Bytes()) {
			t.Fatalf("streaming and parallel outputs differ")
		}
		if sErr != nil && pErr == nil {
			t.Fatalf("parallel accepted input the streaming decoder rejects: %v", sErr)
		}
		// The parallel stream reader trusts the block headers' sizes: it
		// must agree with the streaming decoder exactly, errors included.
		psOut, psErr := fuzzDrain(NewParallelStreamReader(context.Background(), bytes.NewReader(c),
			Options{Workers: 2, MaxInFlight: 4 << 20}))
		checkFuzzErr(t, psErr, len(c))
		if (sErr == nil) != (psErr == nil) {
			t.Fatalf("streaming (%v) and parallel stream (%v) disagree", sErr, psErr)
		}
		if sErr == nil && !bytes.Equal(sOut.Bytes(), psOut.Bytes()) {
			t.Fatalf("streaming and parallel stream outputs differ")
		}
	})
}

// fuzzDrain reads what a parallel front end decodes, up to one byte past
// the fuzz output limit, and closes it.
func fuzzDrain(r io.ReadCloser, err error) (*bytes.Buffer, error) {
	var out bytes.Buffer
	if err != nil {
		return &out, err
	}
	defer r.Close()
	if _, err = io.CopyN(&out, r, fuzzOutputLimit+1); err == io.EOF {
		err = nil
	}
	return &out, err
}

func checkFuzzErr(t *testing.T, err error, size int) {
	t.Helper()
	if err == nil {
		return
	}
	var xe *Error
	if !errors.As(err, &xe) {
		t.Fatalf("error is not *Error: %v", err)
	}
	if xe.Offset < 0 || xe.Offset > int64(size) {
		t.Fatalf("error offset %d outside input of %d bytes: %v", xe.Offset, size, err)
	}
}

func FuzzIndex(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, c []byte) {
		idx, err := ReadIndex(bytes.NewReader(c), int64(len(c)))
		if err != nil {
			checkFuzzErr(t, err, len(c))
			return
		}
		var total int64
		next := int64(0)
		for i, s := range idx.Streams {
			if s.Offset != next || s.Size < streamHeaderSize+streamFooterSize {
				t.Fatalf("stream %d at %d size %d, expected at %d", i, s.Offset, s.Size, next)
			}
			next = s.Offset + s.Size + s.Padding
		}
		if next != int64(len(c)) {
			t.Fatalf("streams cover %d of %d bytes", next, len(c))
		}
		for _, b := range idx.Blocks {
			s := idx.Streams[b.Stream]
			if b.Offset < s.Offset+streamHeaderSize || b.Offset+b.UnpaddedSize > s.Offset+s.Size {
				t.Fatalf("block %+v outside stream %+v", b, s)
			}
			if b.UncompressedOffset != total {
				t.Fatalf("block uncompressed offset %d, want %d", b.UncompressedOffset, total)
			}
			total += b.UncompressedSize
		}
		if total != idx.UncompressedSize {
			t.Fatalf("UncompressedSize %d, blocks sum to %d", idx.UncompressedSize, total)
		}
	})
}
