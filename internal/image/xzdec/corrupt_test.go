package xzdec

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// smallMultiBlock is a multi-block file with a strong check, so every
// single-byte change must be detected.
func smallMultiBlock(t *testing.T) []byte {
	needXZ(t)
	return xzCompress(t, genImage(200000, 5, false), "-6", "--check=crc64", "--block-size=60000")
}

// decodeErr decodes c with every front end and returns their errors: the
// streaming Reader, the parallel reader of a file, and the parallel reader
// of a stream.
func decodeErr(c []byte) (stream, parallel, parallelStream error) {
	r, err := NewReader(bytes.NewReader(c))
	if err == nil {
		_, err = io.Copy(io.Discard, r)
	}
	stream = err
	pr, err := NewParallelReader(context.Background(), bytes.NewReader(c), int64(len(c)), Options{Workers: 2})
	if err == nil {
		_, err = io.Copy(io.Discard, pr)
		pr.Close()
	}
	parallel = err
	sr, err := NewParallelStreamReader(context.Background(), bytes.NewReader(c), Options{Workers: 2})
	if err == nil {
		_, err = io.Copy(io.Discard, sr)
		sr.Close()
	}
	return stream, parallel, err
}

func TestTruncated(t *testing.T) {
	// Both kinds of block: -T2 records the sizes in the block headers, so
	// the stream's blocks go to the workers; without -T they are decoded
	// where they are read.
	for _, c := range [][]byte{smallMultiBlock(t), smallMultiBlockT2(t)} {
		for n := 0; n < len(c); n += 1 + n/64 {
			s, p, ps := decodeErr(c[:n])
			requireXZError(t, s, n)
			requireXZError(t, p, n)
			requireXZError(t, ps, n)
		}
	}
}

// smallMultiBlockT2 is smallMultiBlock as xz -T2 writes it: every block
// header records its compressed and uncompressed sizes.
func smallMultiBlockT2(t *testing.T) []byte {
	needXZ(t)
	return xzCompress(t, genImage(200000, 5, false), "-6", "-T2", "--check=crc64", "--block-size=60000")
}

func TestCorrupted(t *testing.T) {
	for _, c := range [][]byte{smallMultiBlock(t), smallMultiBlockT2(t)} {
		for i := 0; i < len(c); i += 1 + i/100 {
			for _, x := range []byte{0x01, 0x80, 0xFF} {
				d := bytes.Clone(c)
				d[i] ^= x
				s, p, ps := decodeErr(d)
				if s == nil || p == nil || ps == nil {
					t.Fatalf("flip %#x at %d not detected: stream %v, parallel %v, parallel stream %v", x, i, s, p, ps)
				}
				requireXZError(t, s, len(d))
				requireXZError(t, p, len(d))
				requireXZError(t, ps, len(d))
			}
		}
	}
}

// rewriteIndex rewrites the last stream's index with edit applied to the
// records and fixes the index CRC32, so only the cross-checks against the
// blocks can catch the lie.
func rewriteIndex(t *testing.T, c []byte, edit func(recs []indexRecord)) []byte {
	t.Helper()
	foot := len(c) - streamFooterSize
	back := int((binary.LittleEndian.Uint32(c[foot+4:]) + 1) * 4)
	ioff := foot - back
	recs, err := parseIndex(c[ioff:foot], int64(ioff))
	if err != nil {
		t.Fatal(err)
	}
	edit(recs)
	idx := []byte{0}
	idx = binary.AppendUvarint(idx, uint64(len(recs)))
	for _, r := range recs {
		idx = binary.AppendUvarint(idx, uint64(r.unpadded))
		idx = binary.AppendUvarint(idx, uint64(r.uncomp))
	}
	for len(idx)%4 != 0 {
		idx = append(idx, 0)
	}
	if len(idx)+4 != back {
		t.Fatalf("edited index changed size")
	}
	idx = binary.LittleEndian.AppendUint32(idx, crc32.ChecksumIEEE(idx))
	out := bytes.Clone(c)
	copy(out[ioff:], idx)
	return out
}

func TestIndexMismatch(t *testing.T) {
	c := smallMultiBlock(t)
	tests := []struct {
		name string
		edit func([]indexRecord)
	}{
		{"uncomp+1", func(r []indexRecord) { r[1].uncomp++ }},
		{"uncomp-1", func(r []indexRecord) { r[0].uncomp-- }},
		{"swap-last", func(r []indexRecord) { r[len(r)-1].uncomp, r[0].uncomp = r[0].uncomp, r[len(r)-1].uncomp }},
		{"unpadded+4", func(r []indexRecord) { r[0].unpadded += 4; r[1].unpadded -= 4 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range [][]byte{c, smallMultiBlockT2(t)} {
				d := rewriteIndex(t, c, tt.edit)
				s, p, ps := decodeErr(d)
				requireXZError(t, s, len(d))
				requireXZError(t, p, len(d))
				requireXZError(t, ps, len(d))
			}
		})
	}
}

// TestFooterMismatch edits the stream footer with its CRC32 fixed, so only
// the header/footer and index/backward-size cross-checks can catch it.
func TestFooterMismatch(t *testing.T) {
	c := smallMultiBlock(t) // CRC64
	fix := func(d []byte) []byte {
		f := d[len(d)-streamFooterSize:]
		binary.LittleEndian.PutUint32(f, crc32.ChecksumIEEE(f[4:10]))
		return d
	}
	tests := []struct {
		name string
		edit func(f []byte)
	}{
		{"check-type", func(f []byte) { f[9] = byte(CheckCRC32) }},
		{"backward-size+4", func(f []byte) { binary.LittleEndian.PutUint32(f[4:], binary.LittleEndian.Uint32(f[4:])+1) }},
		{"backward-size-4", func(f []byte) { binary.LittleEndian.PutUint32(f[4:], binary.LittleEndian.Uint32(f[4:])-1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := bytes.Clone(c)
			tt.edit(d[len(d)-streamFooterSize:])
			d = fix(d)
			s, p, ps := decodeErr(d)
			requireXZError(t, s, len(d))
			requireXZError(t, p, len(d))
			requireXZError(t, ps, len(d))
			_, err := ReadIndex(bytes.NewReader(d), int64(len(d)))
			requireXZError(t, err, len(d))
		})
	}
}

// TestReadIndexMatchesXZList compares block and stream counts and sizes
// with `xz --robot --list`.
func TestReadIndexMatchesXZList(t *testing.T) {
	needXZ(t)
	data := testImage()
	c := append(xzCompress(t, data[:1000000], "-T2", "--block-size=100000"), 0, 0, 0, 0)
	c = append(c, xzCompress(t, data[1000000:], "-3", "--block-size=700000", "--check=sha256")...)
	path := t.TempDir() + "/x.xz"
	if err := os.WriteFile(path, c, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(context.Background(), "xz", "--robot", "--list", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	var streams, blocks, comp, uncomp int64
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\t")
		if f[0] == "totals" {
			streams, _ = strconv.ParseInt(f[1], 10, 64)
			blocks, _ = strconv.ParseInt(f[2], 10, 64)
			comp, _ = strconv.ParseInt(f[3], 10, 64)
			uncomp, _ = strconv.ParseInt(f[4], 10, 64)
		}
	}
	idx, err := ReadIndex(bytes.NewReader(c), int64(len(c)))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(idx.Streams)) != streams || int64(len(idx.Blocks)) != blocks ||
		idx.UncompressedSize != uncomp || comp != int64(len(c)) {
		t.Fatalf("ReadIndex: %d streams, %d blocks, %d bytes; xz --list: %d, %d, %d (file %d, xz %d)",
			len(idx.Streams), len(idx.Blocks), idx.UncompressedSize, streams, blocks, uncomp, len(c), comp)
	}
}

// TestParallelStreamCloseWhileStalled closes the parallel stream reader
// while its input has stopped mid-file (a stalled download): Close returns
// and a later Read fails, without waiting for the input's read to end;
// closing the input then ends the reading goroutine.
func TestParallelStreamCloseWhileStalled(t *testing.T) {
	c := smallMultiBlockT2(t)
	pr, pw := io.Pipe()
	go pw.Write(c[:len(c)/2]) // and no more: the writer stalls
	sr, err := NewParallelStreamReader(context.Background(), pr, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1000)
	if _, err := io.ReadFull(sr, buf); err != nil {
		t.Fatalf("first bytes: %v", err)
	}
	sr.Close()
	if _, err := sr.Read(buf); err == nil {
		t.Fatal("Read after Close succeeded")
	}
	pr.CloseWithError(io.ErrClosedPipe)
}
