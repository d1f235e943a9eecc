package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/usbflash/usbflash/internal/testkit/osimage"

	"github.com/usbflash/usbflash/internal/ui/eventsdoc"
)

// docSection returns the lines of a Markdown file (relative to the
// repository's root) from the heading to the next heading of the same or a
// higher level.
func docSection(t *testing.T, file, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	level := strings.Index(heading, " ")
	for i, l := range lines {
		if l != heading {
			continue
		}
		fenced := false // a # in a code block is a comment, not a heading
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "```") {
				fenced = !fenced
			}
			if h := strings.Index(lines[j], " "); !fenced && strings.HasPrefix(lines[j], "#") && h <= level && strings.Trim(lines[j][:h], "#") == "" {
				return lines[i+1 : j]
			}
		}
		return lines[i+1:]
	}
	t.Fatalf("%s has no %q", file, heading)
	return nil
}

// tableRows returns the cells of a Markdown table's body rows.
func tableRows(lines []string) [][]string {
	var rows [][]string
	for _, l := range lines {
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	if len(rows) > 0 {
		rows = rows[1:] // the header
	}
	return rows
}

// TestREADME holds README's exit-code table and its two set-up commands to
// the code, the Makefile and CI.
func TestREADME(t *testing.T) {
	t.Parallel()
	t.Run("exit codes", readmeExitCodes)
	t.Run("two commands", readmeTwoCommands)
}

// readmeExitCodes: README's table is exitCodes(), both ways, and --help
// prints it.
func readmeExitCodes(t *testing.T) {
	// What the table documents of each code (the class is the code's).
	type documented struct {
		code          int
		name, meaning string
	}
	var readme, code []documented
	for _, row := range tableRows(docSection(t, "README.md", "## Exit codes")) {
		c, err := strconv.Atoi(row[0])
		if err != nil || len(row) != 3 {
			t.Fatalf("README exit-code row %q: want code | name | meaning", row)
		}
		readme = append(readme, documented{c, row[1], row[2]})
	}
	for _, s := range exitCodes() {
		code = append(code, documented{s.code, s.name, s.meaning})
	}
	for _, s := range code {
		if !slices.Contains(readme, s) {
			t.Errorf("code's %+v is not in README's table", s)
		}
	}
	for _, s := range readme {
		if !slices.Contains(code, s) {
			t.Errorf("README's %+v is not in the code's table", s)
		}
	}
	// --help prints the same table.
	r := runCLI(t, "--help")
	for _, s := range code {
		if !regexp.MustCompile(`(?m)^  ` + strconv.Itoa(s.code) + ` +` + s.name + ` +` + regexp.QuoteMeta(s.meaning) + `$`).MatchString(r.stdout) {
			t.Errorf("--help does not list exit code %d %s", s.code, s.name)
		}
	}
}

// schemaPath is the events' contract, beside their types.
const schemaPath = "../../internal/ui/jsonevents/events.schema.json"

// eventSchema compiles events.schema.json.
func eventSchema(t *testing.T) (*jsonschema.Schema, map[string]any) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(schemaPath)
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	return sch, raw
}

func schemaDefs(raw map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for name, d := range raw["$defs"].(map[string]any) {
		if props, ok := d.(map[string]any)["properties"].(map[string]any); ok {
			out[name] = props
		}
	}
	return out
}

// TestEventsDocMatchesSchema holds docs/events.md to what go generate
// makes of the schema, and the schema's error event to the exit codes.
func TestEventsDocMatchesSchema(t *testing.T) {
	t.Parallel()
	schema, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := eventsdoc.Render(schema)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/events.md is not what events.schema.json and eventsdoc/events.md.tmpl make: run go generate ./cmd/usbflash")
	}
	_, raw := eventSchema(t)
	defs := schemaDefs(raw)
	// Every event the schema defines has its fields in the reference.
	for name, props := range defs {
		if _, ok := props["event"]; !ok {
			continue
		}
		if !bytes.Contains(got, []byte("#### `"+name+"`\n")) && !bytes.Contains(got, []byte("(schema: `"+name+"`)\n")) {
			t.Errorf("docs/events.md has no fields of event %s: add {{fields %q}} to events.md.tmpl", name, name)
		}
	}
	// The error event's codes and names are the exit-code table's.
	props := defs["error"]
	var codes, names []any
	for _, s := range exitCodes() {
		if s.code != exitOK {
			codes, names = append(codes, float64(s.code)), append(names, s.name)
		}
	}
	if got := props["code"].(map[string]any)["enum"]; !reflect.DeepEqual(got, codes) {
		t.Errorf("schema error codes %v, table %v", got, codes)
	}
	if got := props["name"].(map[string]any)["enum"]; !reflect.DeepEqual(got, names) {
		t.Errorf("schema error names %v, table %v", got, names)
	}
}

// TestEveryEventMatchesSchema runs the commands through their successes
// and failures and checks every line they print under --json.
func TestEveryEventMatchesSchema(t *testing.T) {
	t.Parallel()
	sch, _ := eventSchema(t)
	img := testImage(2<<20 + 100)
	raw := writeFile(t, "os.img", img)
	gz := writeFile(t, "os.img.gz", compress(t, "gzip", img))
	dir := t.TempDir()
	benchImg := testImage(8 << 20)
	bench := func() string { return writeFile(t, "bench.img", benchImg) } // one card for each run: they run at once
	card := func(name string) string { return filepath.Join(dir, name) }
	holey := holeyImage()
	holeyPath := writeFile(t, "holey.img", holey)
	blockMap := filepath.Join(dir, "holey.img.bmap")
	makeMap(t, blockMap, holey)
	web := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(gz))))
	defer web.Close()
	boot, err := osimage.BootableAs(t.TempDir(), osimage.Layout{FAT: "12"}, 1<<20, 4<<20, 1<<20, osimage.RaspiosBoot, 7)
	if err != nil {
		t.Fatal(err)
	}
	bootable := writeFile(t, "boot.img", boot)
	runs := [][]string{
		// First-boot settings on several cards: what each received.
		{"write", "--json", "--yes", "--hostname", "pi-{n}", bootable, "sim:" + card("cz1") + "?size=8MiB", "sim:" + card("cz2") + "?size=8MiB"},
		// From a URL: the download beside the write, one card and two.
		{"write", "--json", "--yes", "--transfer-size", "256KiB", web.URL + "/os.img.gz", "sim:" + card("u1") + "?size=4MiB"},
		{"write", "--json", "--yes", web.URL + "/os.img.gz", "sim:" + card("u2") + "?size=4MiB", "sim:" + card("u3") + "?size=4MiB"},
		{"write", "--json", "--yes", "--transfer-size", "256KiB", gz, "sim:" + card("a") + "?size=4MiB&max-transfer=256"},
		{"write", "--json", "--yes", "--no-verify", raw, "sim:" + card("b") + "?size=4MiB"},
		{"write", "--json", "--yes", "--eject", raw, "file:" + card("c") + "?size=4MiB"},
		{"write", "--json", "--yes", "--eject", raw, "sim:" + card("d") + "?size=4MiB"},
		{"write", "--json", "-q", "--yes", raw, "sim:" + card("e") + "?size=4MiB"},
		{"write", "--json", "--yes", raw, "sim:" + card("f") + "?size=4MiB&fault=medium-error:lba=3000,persistent"},
		{"write", "--json", "--yes", raw, "sim:" + card("g") + "?size=1MiB"},
		{"write", "--json", raw, "sim:" + card("h") + "?size=4MiB"},
		{"write", "--json", "--yes", raw, "usb:zz"},
		{"write", "--json", "--transfer-size", "64GiB", raw, "sim:" + card("i")},
		{"write", "--json", "--buffers", "x", raw, "sim:" + card("i")},
		{"verify", "--json", raw, "sim:" + card("a")},
		{"verify", "--json", gz, "sim:" + card("b")},
		{"verify", "--json", raw, "sim:" + card("g") + "?size=1MiB"},
		{"info", "--json", "/dev/sda"},
		{"info", "--json", "sim:" + card("j") + "?nomedium=1"},
		{"list", "--json", "extra"},
		{"write", "--json", "--yes", raw, "sim:" + card("m1") + "?size=4MiB",
			"sim:" + card("m2") + "?size=4MiB&fault=medium-error:lba=3000,persistent"},
		{"write", "--json", "--yes", "--no-verify", "--lag", "0", raw, "sim:" + card("m3") + "?size=4MiB", "sim:" + card("m4") + "?size=4MiB"},
		// How the read-back is checked: SHA-256, one card and several; a
		// card that drops what is written past 1 MiB; no such hash.
		{"write", "--json", "--yes", "--verify-hash", "sha256", raw, "sim:" + card("s1") + "?size=4MiB"},
		{"write", "--json", "--yes", "--verify-hash", "sha256", raw, "sim:" + card("s2") + "?size=4MiB", "sim:" + card("s3") + "?size=4MiB"},
		{"write", "--json", "--yes", raw, "sim:" + card("s4") + "?size=16MiB&fake=drop&real=1MiB"},
		{"write", "--json", "--yes", "--verify-hash", "md5", raw, "sim:" + card("s5")},
		{"write", "--json", "--yes", "--skip-refused", raw, "sim:" + card("m5") + "?size=4MiB&wp=1", "sim:" + card("m6") + "?size=4MiB"},
		// bench: every measurement, with a note (the reader's transfer
		// limit); --write --preserve beside the kernel's paths (save,
		// restored); only the outcome; a refusal; a usage error.
		{"bench", "--json", "--time", "20ms", "--random-time", "20ms", "--sizes", "4KiB,64KiB", "sim:" + bench() + "?max-transfer=64"},
		{"bench", "--json", "--time", "20ms", "--random-time", "20ms", "--sizes", "4KiB,64KiB", "--skip", "align,roundtrip",
			"--write", "--preserve", "--yes", "--region", "1MiB:1MiB", "--compare=file:" + bench(), "--plot", filepath.Join(dir, "bench.svg"), "sim:" + bench()},
		{"bench", "--json", "-q", "--time", "20ms", "--skip", "align,random,roundtrip", "--sizes", "64KiB", "sim:" + bench()},
		// A reader that offers both transports: the same pass on each.
		{"bench", "--json", "--time", "20ms", "--skip", "align,random,roundtrip", "--sizes", "64KiB", "--write", "--yes", "--region", "1MiB:1MiB", "sim:" + bench() + "?uas=both&streams=4"},
		{"bench", "--json", "--time", "20ms", "--write", "--yes", "--region", "1MiB:1MiB", "sim:" + bench() + "?wp=1"},
		{"bench", "--json", "--write", "sim:" + bench()},
		// Block maps and backups (bmap.go, read.go).
		{"write", "--json", "--yes", "--transfer-size", "64KiB", "--bmap", blockMap, holeyPath, "sim:" + card("k") + "?size=4MiB"},
		{"write", "--json", "--yes", "--no-verify", "--sparse", holeyPath, "sim:" + card("l") + "?size=4MiB"},
		{"write", "--json", "--yes", "--bmap", blockMap, holeyPath, "sim:" + card("m7") + "?size=4MiB", "sim:" + card("m8") + "?size=4MiB"},
		{"write", "--json", "--yes", "--bmap", writeFile(t, "bad.bmap", []byte("<bmap")), holeyPath, "sim:" + card("n") + "?size=4MiB"},
		{"read", "--json", "sim:" + card("a"), card("a.img.zst")},
		{"read", "--json", "--used", "--verify", "sim:" + card("b"), card("b.img")},
		{"read", "--json", "--size", "1MiB", "sim:" + card("a"), card("a.img.zst")},
		{"read", "--json", "sim:" + card("a") + "?fault=medium-error:lba=3000,persistent", card("f.img.gz")},
		// check: a genuine card, a fake one (summary, then error 8), only
		// the outcome, a write-protected card.
		{"check", "--json", "--max-cache", "4MiB", "sim:" + card("o") + "?size=16MiB"},
		{"check", "--json", "sim:" + card("p") + "?size=16MiB&fake=drop&real=5MiB&fake-cache=1MiB"},
		{"check", "--json", "-q", "sim:" + card("q") + "?size=16MiB&fake=wrap&real=3MiB"},
		{"check", "--json", "sim:" + card("r") + "?size=16MiB&wp=1"},
		// erase and format: one card, several, a refusal.
		{"erase", "--json", "--yes", "sim:" + card("e1") + "?size=4MiB&unmap=unmap"},
		{"erase", "--json", "--yes", "--random", "sim:" + card("e2") + "?size=4MiB", "sim:" + card("e3") + "?size=2MiB"},
		{"erase", "--json", "--yes", "sim:" + card("e4") + "?size=4MiB&wp=1"},
		{"format", "--json", "--yes", "--label", "x", "sim:" + card("f1") + "?size=2GiB", "sim:" + card("f2") + "?size=64GiB"},
		{"format", "--json", "--yes", "--label", "a.b", "sim:" + card("f3") + "?size=2GiB"},
	}
	var mu sync.Mutex // guards seen
	seen := map[string]bool{}
	// The runs at once, but for those that read a card a write made:
	// those after them, one at a time.
	var after [][]string
	t.Run("writes", func(t *testing.T) {
		for i, args := range runs {
			if args[0] == "verify" || args[0] == "read" {
				after = append(after, args)
				continue
			}
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				checkEvents(t, sch, args, &mu, seen)
			})
		}
	})
	for _, args := range after {
		checkEvents(t, sch, args, &mu, seen)
	}
	for _, name := range []string{"start", "device", "phase", "progress", "note", "summary", "error", "card", "card_progress", "point", "restored",
		"block_map", "start of read", "summary of read", "start of check", "summary of check", "download",
		"start of erase", "summary of erase", "start of format", "summary of format"} {
		if !seen[name] {
			t.Errorf("no run emitted a %s event", name)
		}
	}
}

// checkEvents runs args and holds each event it prints to the schema,
// noting its name (and command) in seen.
func checkEvents(t *testing.T, sch *jsonschema.Schema, args []string, mu *sync.Mutex, seen map[string]bool) {
	t.Helper()
	r := runCLI(t, args...)
	if strings.TrimSpace(r.stdout) == "" {
		t.Errorf("%v: nothing on stdout (exit %d, stderr %q)", args, r.code, r.stderr)
		return
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for i, line := range lines {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err != nil {
			t.Fatalf("%v: %q: %v", args, line, err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%v: %s\ndoes not match the schema: %v", args, line, err)
		}
		name := inst.(map[string]any)["event"].(string)
		mu.Lock()
		seen[name] = true
		if cmd, ok := inst.(map[string]any)["command"].(string); ok {
			seen[name+" of "+cmd] = true
		}
		mu.Unlock()
		// A failure ends with its error event; a success has none.
		if last := i == len(lines)-1; (name == "error") != (last && r.code != exitOK) {
			t.Errorf("%v (exit %d): %s event at line %d of %d", args, r.code, name, i+1, len(lines))
		}
	}
}

// readmeTwoCommands: README's set-up gives the two commands a fresh
// machine needs, the main job on sim: and the tests; both are make
// targets, and CI runs the test command as README gives it.
func readmeTwoCommands(t *testing.T) {
	var cmds []string
	in := false
	for _, l := range docSection(t, "README.md", "## Set-up and the two commands") {
		switch {
		case strings.HasPrefix(l, "```"):
			in = !in
		case in:
			cmd, _, _ := strings.Cut(l, "#")
			cmds = append(cmds, strings.TrimSpace(cmd))
		}
	}
	if want := []string{"make demo", "make test"}; !slices.Equal(cmds, want) {
		t.Fatalf("README's set-up gives %q, want %q", cmds, want)
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if !regexp.MustCompile(`(?m)^` + strings.TrimPrefix(c, "make ") + `:`).Match(makefile) {
			t.Errorf("the Makefile has no target for README's %q", c)
		}
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^` + cmds[1] + `$`).Match(ci) {
		t.Errorf(".ci/run does not run README's test command %q", cmds[1])
	}
}
