package imagesrc

import (
	"bytes"
	"errors"
	"testing"
)

// TestGzipTrailingData: zero padding after the last member is accepted, as
// GNU gzip accepts it; any other trailing data is damage.
func TestGzipTrailingData(t *testing.T) {
	img := genOSImage(300<<10, 6)
	gz, err := srcGzipGo(img)
	if err != nil {
		t.Fatal(err)
	}
	half, err := srcGzipGo(img[:100<<10])
	if err != nil {
		t.Fatal(err)
	}
	rest, err := srcGzipGo(img[100<<10:])
	if err != nil {
		t.Fatal(err)
	}
	zeros := func(n int) []byte { return make([]byte, n) }
	for _, tt := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"zero padding", srcConcat(gz, zeros(1000)), true},
		{"one zero byte", srcConcat(gz, zeros(1)), true},
		{"a sector of zeros after two members", srcConcat(half, rest, zeros(512)), true},
		{"two members", srcConcat(half, rest), true},
		{"garbage", srcConcat(gz, []byte("garbage")), false},
		{"zeros then garbage", srcConcat(gz, zeros(16), []byte{1}), false},
		{"half a member header", srcConcat(gz, []byte{0x1f}), false},
	} {
		for _, how := range srcWaysIn {
			_, out, err := srcDecode(t, tt.data, how)
			if tt.ok && (err != nil || !bytes.Equal(out, img)) {
				t.Errorf("%s (%s): %d bytes, %v; want the image", tt.name, how, len(out), err)
			}
			var se *Error
			if !tt.ok && !errors.As(err, &se) {
				t.Errorf("%s (%s): error %v, want an *Error", tt.name, how, err)
			}
		}
	}
}
