package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/station"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

func testReport() *session.Report {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	lba := int64(4096)
	return &session.Report{Image: "os.img.xz", SHA256: "ab12", Started: t0, Cards: []session.Record{
		{Target: "usb:46f4:0001:A", Serial: "A", Capacity: 1 << 30, Bytes: 1 << 20, Rate: 35e6, Bound: "device", Verified: true, Verify: "xxh3 per transfer",
			Started: t0, Finished: t0.Add(time.Second), Result: "ok", Customized: &session.Customized{Format: "systemd", Files: nil}},
		{Target: "usb:46f4:0001:B", Serial: "B", Capacity: 1 << 30, Error: "write failed at LBA 2048-4095", Code: 5, Started: t0, Finished: t0.Add(time.Second),
			Result: "verify", BadLBA: &lba, Expected: "00", Read: "ff"},
	}}
}

// TestFileFormats: a Run's report as JSON (the card event's record for
// each card) and as CSV (a row each, verify and the station's columns
// after the others), written again whole as each card finishes, leaving
// no temporary file.
func TestFileFormats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rep := testReport()
	add := func(path string) {
		t.Helper()
		f, err := New(path)
		if err != nil {
			t.Fatal(err)
		}
		all := rep.Cards
		for i := range all {
			rep.Cards = all[:i+1]
			if err := f.Add(rep, all[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	jsonPath := filepath.Join(dir, "run.json")
	add(jsonPath)
	b, _ := os.ReadFile(jsonPath)
	var back struct {
		SHA256 string
		Cards  []map[string]any
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Cards) != 2 || back.Cards[1]["exit_code"] != float64(5) || back.Cards[0]["verified"] != true || back.SHA256 != "ab12" ||
		back.Cards[1]["bad_lba"] != float64(4096) || back.Cards[0]["customized"] == nil || back.Cards[1]["customized"] != nil {
		t.Errorf("JSON report read back as %+v", back)
	}
	if !strings.HasPrefix(string(b), "{\n  \"image\": \"os.img.xz\",\n  \"sha256\": \"ab12\",\n  \"started\": \"2026-11-30T12:00:00Z\",\n  \"cards\": [\n    {\n      \"target\": \"usb:46f4:0001:A\",") {
		t.Errorf("JSON report:\n%s", b)
	}

	csvPath := filepath.Join(dir, "run.csv")
	add(csvPath)
	rows, err := csv.NewReader(bytes.NewReader(must(os.ReadFile(csvPath)))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0][2] != "target" || rows[2][2] != "usb:46f4:0001:B" || rows[2][10] != "write failed at LBA 2048-4095" ||
		rows[0][13] != "verify" || rows[1][13] != "xxh3 per transfer" || rows[2][13] != "" || rows[0][14] != "result" || rows[2][28] != "4096" {
		t.Errorf("CSV report: %q", rows)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("report directory holds %d files, want 2", len(entries))
	}
}

// TestCSVTextCells: a device's strings and other text from outside reach
// the CSV as text: a cell a spreadsheet would run as a formula starts
// with an apostrophe, control characters are escaped, and a CSV reader
// gets back exactly that.
func TestCSVTextCells(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ serial, want string }{
		{"SN123", "SN123"},
		{`=HYPERLINK("http://x.invalid","y")`, `'=HYPERLINK("http://x.invalid","y")`},
		{"+1+1", "'+1+1"},
		{"-2+3", "'-2+3"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tTAB", "'\tTAB"},
		{"A\x1b[31mRED", `A\x1b[31mRED`},
		{"a,b\"c", "a,b\"c"},
	} {
		var b bytes.Buffer
		r := &session.Report{Image: "os.img", Cards: []session.Record{{Target: "sim:a.img", Serial: tc.serial, Vendor: tc.serial}}}
		if err := writeCSV(&b, r); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatalf("serial %q: %v", tc.serial, err)
		}
		if got := rows[1][3]; got != tc.want || rows[1][19] != tc.want {
			t.Errorf("serial %q in the CSV: %q, vendor %q, want %q", tc.serial, got, rows[1][19], tc.want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestCheck: a report that could not be saved is refused before the
// work starts, naming the report, not a temporary file, and nothing is
// made.
func TestCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		path string
		want string // "" for success
	}{
		{filepath.Join(dir, "ok.json"), ""},
		{filepath.Join(dir, "ok.CSV"), ""},
		{filepath.Join(dir, "run.txt"), "a report is a .json or .csv file"},
		{filepath.Join(dir, "missing", "run.json"), "no such file or directory"},
	}
	for _, tt := range tests {
		_, err := NewStation(tt.path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("NewStation(%s) = %v", tt.path, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path)):
			t.Errorf("NewStation(%s) = %v, want an error naming it and %q", tt.path, err, tt.want)
		case err != nil && strings.Contains(err.Error(), ".run.json."):
			t.Errorf("NewStation(%s) = %v: names the temporary file", tt.path, err)
		case tt.want == "a report is a .json or .csv file" && !errors.Is(err, ErrFormat):
			t.Errorf("NewStation(%s) = %v, want ErrFormat", tt.path, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("checking left %d files behind", len(entries))
	}
}

// TestStationFile: a station's file, a card added at a time, reads as a
// report after every card, and once done is byte for byte what a Run's
// file of the same records is.
func TestStationFile(t *testing.T) {
	t.Parallel()
	for _, ext := range []string{".json", ".csv"} {
		dir := t.TempDir()
		rep := testReport()
		for i := range 5 {
			c := rep.Cards[i%2]
			c.Target = fmt.Sprintf("sim:c%d.img", i)
			rep.Cards = append(rep.Cards, c)
		}
		cards := rep.Cards
		station, err := NewStation(filepath.Join(dir, "station"+ext))
		if err != nil {
			t.Fatal(err)
		}
		head := &session.Report{Image: rep.Image, SHA256: rep.SHA256, Started: rep.Started}
		for i, c := range cards {
			if err := station.Add(head, c); err != nil {
				t.Fatal(err)
			}
			if got, err := targets(station.Path()); err != nil || len(got) != i+1 || got[i] != c.Target {
				t.Fatalf("after %d cards the file holds %v (%v)", i+1, got, err)
			}
		}
		if err := station.Close(); err != nil {
			t.Fatal(err)
		}
		whole, err := New(filepath.Join(dir, "run"+ext))
		if err != nil {
			t.Fatal(err)
		}
		if err := whole.Add(rep, cards[len(cards)-1]); err != nil {
			t.Fatal(err)
		}
		if got, want := must(os.ReadFile(station.Path())), must(os.ReadFile(whole.Path())); !bytes.Equal(got, want) {
			t.Errorf("%s: the station's file is not the whole report's:\n%s\nwant\n%s", ext, got, want)
		}
	}
}

// targets reads a report file as a reader would, and the target of each
// card in it.
func targets(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	if strings.HasSuffix(path, ".json") {
		var r JSON
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, c := range r.Cards {
			out = append(out, c.Target)
		}
		return out, nil
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 || rows[0][2] != "target" {
		return nil, fmt.Errorf("%s: no header", path)
	}
	for _, r := range rows[1:] {
		out = append(out, r[2])
	}
	return out, nil
}

// TestStationKilled: a station killed (SIGKILL, no chance to finish)
// while it writes holds, in its report, every card it said was done, in
// a file a JSON reader takes. The station is this test binary run again
// as runStation.
func TestStationKilled(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("USBFLASH_REPORT_STATION"); dir != "" {
		runStation(t, dir)
		return
	}
	dir := t.TempDir()
	// Under a user-mode emulator (make test-arm64 and the like) the test
	// binary is not one this kernel runs: the emulator runs it again.
	self := []string{os.Args[0], "-test.run=^TestStationKilled$", "-test.count=1"}
	if emu := os.Getenv("USBFLASH_TEST_EXEC"); emu != "" {
		self = append([]string{emu}, self...)
	}
	cmd := exec.Command(self[0], self[1:]...)
	cmd.Env = append(os.Environ(), "USBFLASH_REPORT_STATION="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var done, other []string
	lines := bufio.NewScanner(out)
	for len(done) < 5 && lines.Scan() {
		if target, ok := strings.CutPrefix(lines.Text(), "done "); ok {
			done = append(done, target)
		} else {
			other = append(other, lines.Text())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(done) < 5 {
		t.Fatalf("the station said %d cards were done before it ended:\n%s", len(done), strings.Join(other, "\n"))
	}
	got, err := targets(filepath.Join(dir, "station.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range done {
		if !slices.Contains(got, want) {
			t.Errorf("the report of the killed station lacks %s (it holds %d cards)", want, len(got))
		}
	}
}

// runStation runs a station over 16 sim cards, saying "done TARGET" as each
// is told as done, until it is killed: 5 fast cards, then 11 that take
// seconds each, being written when the kill comes.
func runStation(t *testing.T, dir string) {
	imagePath := filepath.Join(dir, "os.img")
	if err := os.WriteFile(imagePath, testpattern.Bytes(256<<10+100, 7), 0o644); err != nil {
		t.Fatal(err)
	}
	var readers []drive.Found
	for i := range 16 {
		speed := "50MB/s"
		if i >= 5 {
			speed = "50kB/s"
		}
		readers = append(readers, drive.SimReader(filepath.Join(dir, fmt.Sprintf("c%02d.img?size=1MiB&speed=%s", i, speed))))
	}
	obs := session.ObserverFunc(func(e session.Event) {
		if d, ok := e.(session.CardDone); ok {
			fmt.Printf("done %s\n", d.Outcome.Target)
		}
	})
	file, err := NewStation(filepath.Join(dir, "station.json"))
	if err != nil {
		t.Fatal(err)
	}
	find := func(context.Context) ([]drive.Found, error) { return readers, nil }
	_, err = station.Watch(context.Background(), station.Config{Write: session.Config{Image: image.Ref{Path: imagePath}, Engine: session.Engine{TransferSize: 64 << 10, Verify: true}, Output: session.Output{Report: file, Observer: obs}}}, find)
	t.Fatalf("the station ended: %v", err)
}
