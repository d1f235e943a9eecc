package testpattern

import (
	"bytes"
	"testing"
)

func TestBytes(t *testing.T) {
	a, b := Bytes(4096, 1), Bytes(4096, 2)
	if bytes.Equal(a, b) || !bytes.Equal(a, Bytes(4096, 1)) {
		t.Error("the pattern is not a function of its seed")
	}
	if bytes.IndexByte(a, 0) >= 0 {
		t.Error("the pattern has a zero byte")
	}
	if bytes.Equal(a[:512], a[512:1024]) {
		t.Error("two blocks of the pattern are equal")
	}
}
