package image

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseSumList: a checksum list, as served beside an image (a URL's
// SHA256SUMS is whatever the server answers), never panics the parser,
// and every SHA-256 line it yields is 64 lower-case hex digits.
func FuzzParseSumList(f *testing.F) {
	for _, seed := range []string{
		strings.Repeat("a", 64) + "  os.img.xz\n",
		"SHA256 (os img.xz) = " + strings.Repeat("B", 64) + "\n",
		"\\" + strings.Repeat("c", 64) + "  a\\nb\n",
		pgpSignedBegin + "\nHash: SHA512\n\n- " + strings.Repeat("d", 64) + " *x\n" + pgpSigBegin + "\nsig\n",
		"<!doctype html><p>not found</p>",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := parseSumList(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, ln := range l.lines {
			if len(ln.sum) != 64 || strings.Trim(ln.sum, "0123456789abcdef") != "" {
				t.Errorf("line %d gives %q, not a SHA-256", ln.no, ln.sum)
			}
			l.forPath(ln.name, "", true)
		}
	})
}
