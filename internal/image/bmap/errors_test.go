package bmap

import (
	"bytes"
	"io"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// TestErrorTexts: the errors of using a map (an image of another size, a
// range whose bytes do not match, data the map leaves out, a map that
// cannot be written) state facts only, as they come from the calls that
// make them; the parse errors are checked in TestParseRefuses.
func TestErrorTexts(t *testing.T) {
	img := testImage(8, []int64{1, 5}, 0)
	m := &Map{ImageSize: int64(len(img)), BlockSize: 4096, ChecksumType: SHA256,
		Ranges: []Range{{1, 1, sum256(img[4096 : 2*4096])}}}
	wrongSum := *m
	wrongSum.Ranges = []Range{{1, 1, sum256(nil)}}
	check := func(m *Map) error {
		_, err := io.Copy(io.Discard, NewChecker(m, bytes.NewReader(img)))
		return err
	}
	_, marshalType := Marshal(&Map{ChecksumType: SHA1})
	_, marshalSum := Marshal(&Map{ChecksumType: SHA256, Ranges: []Range{{1, 1, ""}}})
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"another image's size", m.CheckImageSize(int64(len(img)) + 512)},
		{"a range's checksum", check(&wrongSum)},
		{"unmapped data", check(m)},
		{"marshal another checksum type", marshalType},
		{"marshal a range without a checksum", marshalSum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			factsonly.Check(t, tc.err.Error())
		})
	}
}
