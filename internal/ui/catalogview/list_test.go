package catalogview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
)

// TestList: the table has a row per entry with its sizes (a dash for a
// size the entry does not give), and --json one object per entry.
func TestList(t *testing.T) {
	entries := []catalog.Entry{
		{Name: "A / Lite", ReleaseDate: "2026-11-19", ExtractSize: 2 << 30, DownloadSize: 512 << 20},
		{Name: "B"},
		{Name: "Broken", Unavailable: "the server answered 404 Not Found"},
	}
	for _, tc := range []struct {
		name   string
		asJSON bool
		lines  []string // each line's fields
	}{
		{"table", false, []string{"NAME RELEASED IMAGE DOWNLOAD", "A / Lite 2026-11-19 2.15 GB 536.9 MB", "B - -", "Broken (unavailable) - - -",
			"Broken is unavailable: the server answered 404 Not Found"}},
		{"json", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := List(&b, entries, tc.asJSON); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if tc.asJSON {
				for i, l := range lines {
					var e jsonevents.CatalogEntry
					if err := json.Unmarshal([]byte(l), &e); err != nil || e.Name != entries[i].Name || e.ExtractSize != entries[i].ExtractSize {
						t.Errorf("line %d: %q: %v", i, l, err)
					}
				}
				if len(lines) != len(entries) {
					t.Errorf("%d lines, want %d", len(lines), len(entries))
				}
				return
			}
			for i := range lines {
				lines[i] = strings.Join(strings.Fields(lines[i]), " ")
			}
			if strings.Join(lines, "\n") != strings.Join(tc.lines, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tc.lines, "\n"))
			}
		})
	}
}

// TestListEscapesNames: a remote catalog's names reach the terminal with
// their control characters escaped (JSON escapes its own).
func TestListEscapesNames(t *testing.T) {
	tests := []struct{ name, want string }{
		{"OS\x1b[2J\x1b]0;title\x07", `OS\x1b[2J\x1b]0;title\x07`},
		{"Lite\u009b31m (64-bit)", `Lite\u009b31m (64-bit)`},
		{"cr\rhidden", `cr\x0dhidden`},
	}
	for _, tc := range tests {
		var b strings.Builder
		if err := List(&b, []catalog.Entry{{Name: tc.name, URL: "https://h/os.img.xz", ReleaseDate: "2026-01-01\x1b[0m"}}, false); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(b.String(), "\x1b\x07\r\u009b") || !strings.Contains(b.String(), tc.want) {
			t.Errorf("List printed %q, want %q escaped", b.String(), tc.want)
		}
	}
}
