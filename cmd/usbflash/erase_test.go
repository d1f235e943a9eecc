package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEraseCommand: erase writes zeros (or a pattern) over every block and
// reads them back; it asks first, refuses without a terminal or --yes,
// refuses a write-protected card, and says what it cannot reach.
func TestEraseCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		erased bool
		stdout []string
		stderr []string
	}{
		{name: "zeros", args: []string{"--yes", "CARD?size=4MiB"}, code: exitOK, erased: true,
			stdout: []string{"Erasing sim:CARD", "writing zeros", "offers no unmap", "Verified 4.19 MB read back"}},
		{name: "json", args: []string{"--yes", "--json", "CARD?size=4MiB"}, code: exitOK, erased: true,
			stdout: []string{`"command":"erase"`, `"event":"summary"`, `"verified":true`}},
		{name: "not confirmed without a terminal", args: []string{"CARD?size=4MiB"}, code: exitRefused, stderr: []string{"pass --yes"}},
		{name: "write-protected", args: []string{"--yes", "CARD?size=4MiB&wp=1"}, code: exitRefused, stderr: []string{"write-protected"}},
		{name: "no target", args: []string{"--yes"}, code: exitUsage, stderr: []string{"at least one TARGET"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			card := filepath.Join(t.TempDir(), "card.img")
			old := bytes.Repeat([]byte{0xa5}, 1<<20)
			if err := os.WriteFile(card, old, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"erase"}
			for _, a := range tc.args {
				args = append(args, strings.Replace(a, "CARD", "sim:"+card, 1))
			}
			r := runCLI(t, args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, s := range tc.stdout {
				if s = strings.Replace(s, "sim:CARD", "sim:"+card, 1); !strings.Contains(r.stdout, s) {
					t.Errorf("stdout does not say %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(s)) {
					t.Errorf("stderr does not say %q:\n%s", s, r.stderr)
				}
			}
			got, _ := os.ReadFile(card)
			if erased := len(got) == 4<<20 && bytes.Count(got, []byte{0}) == len(got); erased != tc.erased {
				t.Errorf("erased %v, want %v", erased, tc.erased)
			}
			if !tc.erased && !bytes.Equal(got[:len(old)], old) {
				t.Error("a card that was not to be erased changed")
			}
		})
	}
}
