package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteVerifyHash: the read-back is checked by digests unless
// --verify-hash sha256; either way a card that drops what is written past
// its first MiB fails the verify at the first byte past it that is not
// zero in the image (the card reads zeros there), named by LBA,
// and the flag's mistakes are usage errors.
func TestWriteVerifyHash(t *testing.T) {
	t.Parallel()
	image := writeFile(t, "os.img", testImage(3<<20+1234))
	for _, tc := range []struct {
		name   string
		args   []string
		card   string
		code   int
		stderr string // in the message
	}{
		{"digests, fake card", nil, "?size=16MiB&fake=drop&real=1MiB", exitVerify, "first difference at LBA 2056 (byte offset 1052672)"},
		{"sha256, fake card", []string{"--verify-hash", "sha256"}, "?size=16MiB&fake=drop&real=1MiB", exitVerify, "first difference at LBA 2056 (byte offset 1052672)"},
		{"sha256", []string{"--verify-hash", "sha256"}, "?size=8MiB", exitOK, "SHA-256 checked"},
		{"digests", nil, "?size=8MiB", exitOK, "xxh3 digest checked"},
		{"unknown hash", []string{"--verify-hash", "md5"}, "?size=8MiB", exitUsage, "--verify-hash md5: want xxh3 or sha256"},
		{"nothing to verify", []string{"--no-verify", "--verify-hash", "sha256"}, "?size=8MiB", exitUsage, "--verify-hash has nothing to check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			card := filepath.Join(t.TempDir(), "card.img")
			args := append([]string{"write", "--yes"}, tc.args...)
			r := runCLI(t, append(args, image, "sim:"+card+tc.card)...)
			out := r.stderr + r.stdout
			if r.code != tc.code || !strings.Contains(out, tc.stderr) {
				t.Fatalf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", r.code, tc.code, tc.stderr, r.stdout, r.stderr)
			}
			if hasSHA := strings.Contains(out, "SHA-256 "); hasSHA != (tc.code == exitOK && len(tc.args) > 0) {
				t.Errorf("the image's SHA-256 printed: %v\n%s", hasSHA, out)
			}
		})
	}
}
