package xzdec

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"
)

func TestQuickSpeed(t *testing.T) {
	if os.Getenv("XZQUICK") == "" {
		t.Skip()
	}
	data := genImage(64<<20, 7, true)
	c := xzCompress(t, data, "-6")
	t.Logf("ratio %.2f", float64(len(c))/float64(len(data)))
	t0 := time.Now()
	r, _ := NewReader(bytes.NewReader(c))
	n, err := io.Copy(io.Discard, r)
	d := time.Since(t0)
	t.Logf("ours %d %v %.1f MB/s", n, err, float64(n)/d.Seconds()/1e6)
	t0 = time.Now()
	xzDecompress(t, c)
	d = time.Since(t0)
	t.Logf("xz %.1f MB/s", float64(n)/d.Seconds()/1e6)
}
