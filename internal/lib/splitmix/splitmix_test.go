package splitmix

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestFill: the first output of seed 0 is splitmix64's published first
// value, a short buffer gets the stream's first bytes, and seeds differ.
func TestFill(t *testing.T) {
	p := make([]byte, 16)
	Fill(p, 0)
	if got := binary.LittleEndian.Uint64(p); got != 0xE220A8397B1DCDAF {
		t.Fatalf("first value %#x, want 0xe220a8397b1dcdaf", got)
	}
	short := make([]byte, 13)
	Fill(short, 0)
	if !bytes.Equal(short, p[:13]) {
		t.Fatal("a 13-byte fill is not the 16-byte fill's start")
	}
	q := make([]byte, 16)
	Fill(q, 1)
	if bytes.Equal(p, q) {
		t.Fatal("seeds 0 and 1 give the same bytes")
	}
}
