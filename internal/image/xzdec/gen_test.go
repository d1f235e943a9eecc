package xzdec

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// genImage builds a deterministic OS-image-like payload of n bytes. When
// dense is false about 30% of it is zero runs (unused filesystem space);
// the rest mixes text-like, binary-like (repetitive structs, code-ish) and
// incompressible regions. dense drops the zero runs, which is the case
// that stresses the LZMA literal and match paths.
func genImage(n int, seed uint64, dense bool) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	out := make([]byte, 0, n)
	words := []string{"the ", "kernel ", "module ", "usr/lib/", "systemd ", "config ", "error ",
		"device ", "0x", "return ", "static ", "int ", "{\n", "}\n", "if (", ");\n", "libc.so.6 ", "GLIBC_2.34 "}
	for len(out) < n {
		seg := 4096 + r.IntN(256<<10)
		seg = min(seg, n-len(out))
		kind := r.IntN(10)
		if dense && kind < 3 {
			kind = 3 + r.IntN(7)
		}
		switch {
		case kind < 3: // zero run
			out = append(out, make([]byte, seg)...)
		case kind < 6: // text
			for i := 0; i < seg; {
				w := words[r.IntN(len(words))]
				if r.IntN(8) == 0 {
					w = string(rune('a'+r.IntN(26))) + w
				}
				out = append(out, w...)
				i += len(w)
			}
			out = out[:min(len(out), n)]
		case kind < 9: // binary: records with small varying fields
			rec := make([]byte, 16+r.IntN(48))
			for i := range rec {
				rec[i] = byte(r.IntN(256))
			}
			for i := 0; i < seg; i += len(rec) {
				rec[r.IntN(len(rec))] = byte(r.IntN(256))
				rec[0] = byte(i >> 4)
				out = append(out, rec...)
			}
			out = out[:min(len(out), n)]
		default: // incompressible
			start := len(out)
			out = append(out, make([]byte, seg)...)
			for i := start; i < len(out); i++ {
				out[i] = byte(r.Uint32())
			}
		}
	}
	return out[:n]
}

// xzCompress runs the xz CLI with args on data and returns its output.
func xzCompress(t testing.TB, data []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "xz", append([]string{"-c", "-q"}, args...)...)
	cmd.Stdin = bytes.NewReader(data)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("xz %v: %v: %s", args, err, stderr.Bytes())
	}
	return out.Bytes()
}

// xzDecompress runs xz -dc on data, the reference for byte-exactness.
func xzDecompress(t testing.TB, data []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "xz", append([]string{"-dc", "-q"}, args...)...)
	cmd.Stdin = bytes.NewReader(data)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("xz -dc: %v: %s", err, stderr.Bytes())
	}
	return out.Bytes()
}

func needXZ(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("xz CLI not installed")
	}
}

// cachedXZ compresses data with args once per test binary run, keeping the
// result in dir so that benchmarks do not recompress on every b.N round.
func cachedXZ(t testing.TB, dir, name string, data []byte, args ...string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if err := os.WriteFile(p, xzCompress(t, data, args...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
