package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"runtime"
	"testing"
)

// TestCPUTime: the results count the CPU the process spent. Hashing 16 MiB
// takes milliseconds of CPU on any machine, far above the clock's
// resolution. Where the OS gives no CPU time (the !unix stub) both are 0.
func TestCPUTime(t *testing.T) {
	img := testImage(16<<20, 5)
	dev := newTestDevice(t, int64(len(img))/testBS, testBS, oldByte)
	ctx := context.Background()
	res, err := Write(ctx, dev, bytes.NewReader(img), WriteOptions{ExpectedSize: int64(len(img))})
	if err != nil {
		t.Fatal(err)
	}
	v, err := VerifyHash(ctx, dev, int64(len(img)), sha256.Sum256(img), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counted := res.CPU > 0 && v.CPU > 0
	switch runtime.GOOS {
	case "windows", "plan9", "js", "wasip1":
		counted = !counted && res.CPU == 0 && v.CPU == 0
	}
	if !counted {
		t.Errorf("CPU: write %v, verify %v; want both above zero (zero without the OS's count)", res.CPU, v.CPU)
	}
}
