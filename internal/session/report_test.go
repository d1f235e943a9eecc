package session

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testReport() *Report {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &Report{Image: "os.img.xz", SHA256: "ab12", Started: t0, Cards: []Record{
		{Target: "usb:46f4:0001:A", Serial: "A", Capacity: 1 << 30, Bytes: 1 << 20, Rate: 35e6, Bound: "device", Verified: true, Verify: "xxh3 per transfer", Started: t0, Finished: t0.Add(time.Second)},
		{Target: "usb:46f4:0001:B", Serial: "B", Capacity: 1 << 30, Error: "write failed at LBA 2048-4095", Code: 5, Started: t0, Finished: t0.Add(time.Second)},
	}}
}

func TestReportSave(t *testing.T) {
	dir := t.TempDir()
	s := testReport()

	jsonPath := filepath.Join(dir, "run.json")
	if err := s.Save(jsonPath); err != nil {
		t.Fatal(err)
	}
	var back Report
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Cards) != 2 || back.Cards[1].Code != 5 || !back.Cards[0].Verified || back.SHA256 != "ab12" {
		t.Errorf("JSON report read back as %+v", back)
	}

	csvPath := filepath.Join(dir, "run.csv")
	if err := s.Save(csvPath); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(csvPath)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0][2] != "target" || rows[2][2] != "usb:46f4:0001:B" || rows[2][10] != "write failed at LBA 2048-4095" ||
		rows[0][13] != "verify" || rows[1][13] != "xxh3 per transfer" || rows[2][13] != "" {
		t.Errorf("CSV report: %q", rows)
	}

	// A second save (as --watch does after every card) replaces the file
	// whole and leaves no temporary file behind.
	s.Cards = s.Cards[:1]
	if err := s.Save(csvPath); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("report directory holds %d files, want 2", len(entries))
	}
}

func TestReportRefusesUnknownFormat(t *testing.T) {
	if err := testReport().Save(filepath.Join(t.TempDir(), "run.txt")); !errors.Is(err, ErrReportFormat) {
		t.Errorf("save .txt: %v, want ErrReportFormat", err)
	}
}

// TestCheckReport: a report that could not be saved is refused before the
// work starts, naming the report, not a temporary file.
func TestCheckReport(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		path string
		want string // "" for success
	}{
		{filepath.Join(dir, "ok.json"), ""},
		{filepath.Join(dir, "ok.csv"), ""},
		{filepath.Join(dir, "run.txt"), "a report is a .json or .csv file"},
		{filepath.Join(dir, "missing", "run.json"), "no such file or directory"},
	}
	for _, tt := range tests {
		err := CheckReport(tt.path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckReport(%s) = %v", tt.path, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path)):
			t.Errorf("CheckReport(%s) = %v, want an error naming it and %q", tt.path, err, tt.want)
		case err != nil && strings.Contains(err.Error(), ".run.json."):
			t.Errorf("CheckReport(%s) = %v: names the temporary file", tt.path, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("CheckReport left %d files behind", len(entries))
	}
}
