package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func testSession() *session {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &session{Image: "os.img.xz", SHA256: "ab12", Started: t0, Cards: []cardOutcome{
		{Target: "usb:46f4:0001:A", Serial: "A", Capacity: 1 << 30, Bytes: 1 << 20, Rate: 35e6, Bound: "device", Verified: true, Started: t0, Finished: t0.Add(time.Second)},
		{Target: "usb:46f4:0001:B", Serial: "B", Capacity: 1 << 30, Error: "write failed at LBA 2048-4095", Code: exitDevice, Started: t0, Finished: t0.Add(time.Second)},
	}}
}

func TestSessionSave(t *testing.T) {
	dir := t.TempDir()
	s := testSession()

	jsonPath := filepath.Join(dir, "run.json")
	if err := s.save(jsonPath); err != nil {
		t.Fatal(err)
	}
	var back session
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Cards) != 2 || back.Cards[1].Code != exitDevice || !back.Cards[0].Verified || back.SHA256 != "ab12" {
		t.Errorf("JSON report read back as %+v", back)
	}

	csvPath := filepath.Join(dir, "run.csv")
	if err := s.save(csvPath); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(csvPath)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0][2] != "target" || rows[2][2] != "usb:46f4:0001:B" || rows[2][10] != "write failed at LBA 2048-4095" {
		t.Errorf("CSV report: %q", rows)
	}

	// A second save (as --watch does after every card) replaces the file
	// whole and leaves no temporary file behind.
	s.Cards = s.Cards[:1]
	if err := s.save(csvPath); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("report directory holds %d files, want 2", len(entries))
	}
}

func TestSessionSaveRefusesUnknownFormat(t *testing.T) {
	var u *usageError
	if err := testSession().save(filepath.Join(t.TempDir(), "run.txt")); !errors.As(err, &u) {
		t.Errorf("save .txt: %v, want a usage error", err)
	}
}
