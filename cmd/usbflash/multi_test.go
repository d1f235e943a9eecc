package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteManyCommand: what a many-card write says and exits with; which
// cards hold the image is flash's (flash.TestRunMany). Some cards failing
// is exit 7 with each failed card's card event, a refusal exit 3 naming
// it, --skip-refused names the refused card in the table, and every card
// verified is a "yes" in it.
func TestWriteManyCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	image := filepath.Join(dir, "os.img")
	if err := os.WriteFile(image, testImage(1<<20+3), 0o644); err != nil {
		t.Fatal(err)
	}
	sim := func(name, opts string) string { return "sim:" + filepath.Join(t.TempDir(), name) + "?size=8MiB" + opts }
	slots := filepath.Join(dir, "two.img")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string // each in stdout
		stderr string
		yes    int // verified cards in the table
	}{
		{name: "some failed", args: []string{"--json", sim("a.img", ""), sim("bad.img", "&fault=medium-error:lba=1000,persistent")},
			code: exitPartial, stdout: []string{`"event":"card"`, `"exit_code":5`, "LBA ", `"hint":"use another card"`}},
		{name: "refused", args: []string{sim("a.img", ""), sim("wp.img", "&wp=1")}, code: exitRefused, stderr: "write-protected"},
		{name: "skip refused", args: []string{"--skip-refused", sim("a.img", ""), sim("wp.img", "&wp=1")},
			code: exitPartial, stdout: []string{"TARGET", "write-protected"}, yes: 1},
		{name: "all succeed", args: []string{sim("a.img", ""), sim("b.img", "&block=512&speed=50MB/s"), sim("c.img", "")}, code: exitOK, yes: 3},
		{name: "negative lag", args: []string{sim("a.img", ""), sim("b.img", ""), "--lag", "-1"}, code: exitUsage},
		{name: "a slot left unnamed", args: []string{"sim:" + slots + "?size=8MiB&luns=2", "sim:" + slots + "?size=8MiB&luns=2&lun=1"}, code: exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, append([]string{"write", image, "--yes"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d saying %q\n%s\n%s", r.code, tc.code, tc.stderr, r.stdout, r.stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout does not say %q:\n%s", s, r.stdout)
				}
			}
			if n := strings.Count(r.stdout, " yes "); n != tc.yes {
				t.Errorf("%d cards verified in the table, want %d:\n%s", n, tc.yes, r.stdout)
			}
		})
	}
}
