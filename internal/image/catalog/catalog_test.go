package catalog

import (
	"errors"
	"fmt"
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
			len(e.Devices) != 3 || e.InitFormat != "systemd" || e.Icon != "https://example.invalid/icons/rpi.png" || e.Check() != nil {
			t.Errorf("entry %+v", e)
		}
	}
}

// TestIcons: an entry's icon is resolved against the document that names
// it, a URL's or a file's; an entry without one has none.
func TestIcons(t *testing.T) {
	doc := `{"os_list": [{"name": "a", "url": "https://h/a.img", "icon": "icons/a.png"},
		{"name": "b", "url": "https://h/b.img", "icon": "https://elsewhere/b.png"}, {"name": "c", "url": "https://h/c.img"}]}`
	read := func(string, int64) ([]byte, error) { return []byte(doc), nil }
	for ref, want := range map[string][]string{
		"https://h/lists/os.json":         {"https://h/lists/icons/a.png", "https://elsewhere/b.png", ""},
		filepath.Join("lists", "os.json"): {filepath.Join("lists", "icons", "a.png"), "https://elsewhere/b.png", ""},
	} {
		entries, err := Load(ref, read)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range entries {
			if e.Icon != want[i] {
				t.Errorf("%s: %s's icon %q, want %q", ref, e.Name, e.Icon, want[i])
			}
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
			if e.Unavailable == "" && !isURL(e.URL) {
				t.Errorf("entry %q has a URL no image is read from: %q", e.Name, e.URL)
			}
			e.Check()
		}
	})
}

// TestLoadResolves: an image's and a folder's relative URL are resolved
// against the catalog's location: a URL's, or a local catalog's file
// (kept as a path, not dropped); a remote catalog never names a local
// file, and a URL of another scheme is no image.
func TestLoadResolves(t *testing.T) {
	dir := t.TempDir()
	doc := `{"os_list": [
		{"name": "Beside", "url": "images/os.img.xz"},
		{"name": "Above", "url": "../os.img"},
		{"name": "Absolute", "url": "/srv/os.img"},
		{"name": "Web", "url": "https://h/os.img.xz"},
		{"name": "Elsewhere", "url": "file:///etc/shadow"},
		{"name": "Format", "url": "internal://format"},
		{"name": "Folder", "subitems_url": "more.json"}]}`
	more := `{"os_list": [{"name": "Inner", "url": "inner.img.gz"}]}`
	docs := map[string]string{"https://h/c/os_list.json": doc, "https://h/c/more.json": more,
		filepath.Join(dir, "os_list.json"): doc, filepath.Join(dir, "more.json"): more}
	read := func(ref string, _ int64) ([]byte, error) {
		d, ok := docs[ref]
		if !ok {
			return nil, os.ErrNotExist
		}
		return []byte(d), nil
	}
	tests := []struct {
		ref  string
		want []string // name=URL
	}{
		{filepath.Join(dir, "os_list.json"), []string{
			"Beside=" + filepath.Join(dir, "images", "os.img.xz"), "Above=" + filepath.Join(filepath.Dir(dir), "os.img"),
			"Absolute=/srv/os.img", "Web=https://h/os.img.xz", "Folder / Inner=" + filepath.Join(dir, "inner.img.gz")}},
		{"https://h/c/os_list.json", []string{
			"Beside=https://h/c/images/os.img.xz", "Above=https://h/os.img", "Absolute=https://h/srv/os.img",
			"Web=https://h/os.img.xz", "Folder / Inner=https://h/c/inner.img.gz"}},
	}
	for _, tc := range tests {
		entries, err := Load(tc.ref, read)
		if err != nil {
			t.Fatalf("Load(%s): %v", tc.ref, err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name+"="+e.URL)
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("Load(%s):\n%s\nwant:\n%s", tc.ref, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

// TestLoadUnavailableFolder: a folder whose subitems_url cannot be read
// (missing, not a list) is an entry marked unavailable, with why; the
// rest of the catalog is read and chosen from, and a name in the broken
// folder says it cannot be read.
func TestLoadUnavailableFolder(t *testing.T) {
	docs := map[string]string{
		"https://h/os_list.json": `{"os_list": [
			{"name": "Good OS", "url": "https://h/good.img.xz"},
			{"name": "Broken", "subitems_url": "missing.json"},
			{"name": "Page", "subitems_url": "page.json"},
			{"name": "Others", "subitems_url": "others.json"}]}`,
		"https://h/page.json":   "<!doctype html>",
		"https://h/others.json": `{"os_list": [{"name": "Fine", "url": "https://h/fine.img"}]}`,
	}
	read := func(ref string, _ int64) ([]byte, error) {
		d, ok := docs[ref]
		if !ok {
			return nil, fmt.Errorf("the server answered 404 Not Found: %w", os.ErrNotExist)
		}
		return []byte(d), nil
	}
	entries, err := Load("https://h/os_list.json", read)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name+" "+e.Unavailable)
	}
	want := []string{"Good OS ", "Broken the server answered 404 Not Found: file does not exist",
		"Page " + ErrNotCatalog.Error() + ": invalid character '<' looking for beginning of value", "Others / Fine "}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	tests := []struct {
		name, want string
		err        error
	}{
		{"good", "Good OS", nil},
		{"fine", "Others / Fine", nil},
		{"Broken / Some OS", "", ErrUnavailable},
		{"page", "", ErrUnavailable},
		{"Fedora", "", ErrNoEntry},
	}
	for _, tc := range tests {
		e, err := Find(entries, tc.name)
		if !errors.Is(err, tc.err) || err == nil && e.Name != tc.want {
			t.Errorf("Find(%q) = %q, %v; want %q, %v", tc.name, e.Name, err, tc.want, tc.err)
		}
	}
	for _, e := range entries {
		if e.Name == "Broken" && (e.URL != "" || !strings.HasPrefix(e.Unavailable, "the server answered 404")) {
			t.Errorf("the folder that could not be read: %+v", e)
		}
	}
}

// TestFindShadowed: an entry at the top whose name a folder's entry has
// too is chosen by its name, and the folder's by its folder's.
func TestFindShadowed(t *testing.T) {
	entries := []Entry{
		{Name: "Raspberry Pi OS", URL: "https://h/top.img"},
		{Name: "Archive / Raspberry Pi OS", URL: "https://h/old.img"},
		{Name: "Archive / Raspberry Pi OS Lite", URL: "https://h/lite.img"},
		{Name: "Other / Twin", URL: "https://h/a.img"},
		{Name: "More / Twin", URL: "https://h/b.img"},
	}
	tests := []struct {
		name, want string
		err        error
	}{
		{"Raspberry Pi OS", "Raspberry Pi OS", nil},
		{"raspberry pi os", "Raspberry Pi OS", nil},
		{"Archive / Raspberry Pi OS", "Archive / Raspberry Pi OS", nil},
		{"archive / raspberry pi os lite", "Archive / Raspberry Pi OS Lite", nil},
		{"Twin", "", ErrAmbiguous},
		{"more / twin", "More / Twin", nil},
	}
	for _, tc := range tests {
		e, err := Find(entries, tc.name)
		if !errors.Is(err, tc.err) || err == nil && e.Name != tc.want {
			t.Errorf("Find(%q) = %q, %v; want %q, %v", tc.name, e.Name, err, tc.want, tc.err)
		}
	}
}

// TestNames: the entries' names, in order, for completing one.
func TestNames(t *testing.T) {
	if got := Names([]Entry{{Name: "A / Lite"}, {Name: "B"}}); len(got) != 2 || got[0] != "A / Lite" || got[1] != "B" {
		t.Errorf("Names = %q", got)
	}
}
