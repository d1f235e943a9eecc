package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// readTestdata serves testdata as if at https://example.invalid/.
func readTestdata(ref string, limit int64) ([]byte, error) {
	rel, ok := strings.CutPrefix(ref, "https://example.invalid/")
	if !ok {
		return os.ReadFile(ref)
	}
	return os.ReadFile(filepath.Join("testdata", filepath.FromSlash(rel)))
}

func TestLoad(t *testing.T) {
	for _, ref := range []string{"https://example.invalid/os_list.json", filepath.Join("testdata", "os_list.json")} {
		entries, err := Load(ref, readTestdata)
		if err != nil {
			t.Fatalf("Load(%s): %v", ref, err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name)
		}
		want := []string{"Raspberry Pi OS (64-bit)", "Raspberry Pi OS (other) / Raspberry Pi OS Lite (64-bit)",
			"Raspberry Pi OS (other) / Raspberry Pi OS Lite (32-bit)", "Other general-purpose OS / Ubuntu Server 24.04.3 LTS (64-bit)"}
		if strings.Join(names, "\n") != strings.Join(want, "\n") {
			t.Fatalf("Load(%s) names:\n%s\nwant:\n%s", ref, strings.Join(names, "\n"), strings.Join(want, "\n"))
		}
		e := entries[0]
		if e.ExtractSize != 6215958528 || e.DownloadSize != 1205314660 || e.ExtractSHA256 != strings.ToLower("a8d9DE0E1E4BD1C3A0A5F70F5BFF8A0AB29B64E6F9A0F22B2C4C6D8E0A1B2C3D") ||
			e.DownloadSHA256 != "3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a" || e.ReleaseDate != "2026-11-19" ||
			len(e.Devices) != 3 || e.InitFormat != "systemd" || e.Check() != nil {
			t.Errorf("entry %+v", e)
		}
	}
}

func TestFind(t *testing.T) {
	entries, err := Load("https://example.invalid/os_list.json", readTestdata)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want string // the entry's name, "" for an error
		err  error
	}{
		{"Raspberry Pi OS (64-bit)", "Raspberry Pi OS (64-bit)", nil},
		{"raspberry pi os lite (32-bit)", "Raspberry Pi OS (other) / Raspberry Pi OS Lite (32-bit)", nil},
		{"Raspberry Pi OS (other) / Raspberry Pi OS Lite (64", "Raspberry Pi OS (other) / Raspberry Pi OS Lite (64-bit)", nil},
		{"ubuntu", "Other general-purpose OS / Ubuntu Server 24.04.3 LTS (64-bit)", nil},
		{"Raspberry Pi OS Lite", "", ErrAmbiguous},
		{"Raspberry", "", ErrAmbiguous},
		{"Fedora", "", ErrNoEntry},
		{"Erase", "", ErrNoEntry},
	}
	for _, tc := range tests {
		e, err := Find(entries, tc.name)
		if !errors.Is(err, tc.err) || err == nil && e.Name != tc.want {
			t.Errorf("Find(%q) = %q, %v; want %q, %v", tc.name, e.Name, err, tc.want, tc.err)
		}
		if err != nil {
			factsonly.Check(t, err.Error())
			if failure.Of(err) != failure.Usage {
				t.Errorf("Find(%q): class %v, want usage", tc.name, failure.Of(err))
			}
		}
	}
}

func TestLoadRefuses(t *testing.T) {
	docs := map[string]string{
		"page":  "<!doctype html><p>not here</p>",
		"none":  `{"imager": {}}`,
		"loop":  `{"os_list": [{"name": "again", "subitems_url": "loop"}]}`,
		"badsz": `{"os_list": [{"name": "x", "url": "https://h/x.img", "extract_size": "big"}]}`,
	}
	read := func(ref string, _ int64) ([]byte, error) {
		return []byte(docs[strings.TrimPrefix(ref, "https://h/")]), nil
	}
	for name, want := range map[string]error{"page": ErrNotCatalog, "none": ErrNotCatalog, "badsz": ErrNotCatalog, "loop": nil} {
		_, err := Load("https://h/"+name, read)
		if err == nil || want != nil && !errors.Is(err, want) {
			t.Errorf("Load(%s) = %v, want %v", name, err, want)
		}
		if err != nil && failure.Of(err) != failure.Image {
			t.Errorf("Load(%s): class %v, want image", name, failure.Of(err))
		}
	}
}

func FuzzParse(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "os_list.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"os_list": [{"subitems": [{"subitems": []}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := parse(data)
		if err != nil {
			return
		}
		l := &loader{read: func(string, int64) ([]byte, error) { return data, nil }}
		l.items("https://h/os_list.json", items, nil, 0)
		for _, e := range l.out {
			if !isImage(e.URL) {
				t.Errorf("entry %q has a URL no image is read from: %q", e.Name, e.URL)
			}
			e.Check()
		}
	})
}
