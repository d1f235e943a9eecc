package linuxdisk

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestUnescapeMount(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/media/plain", "/media/plain"},
		{`/media/a\040b`, "/media/a b"},
		{`/a\011tab\012nl\134bs`, "/a\ttab\nnl\\bs"},
		{`/trailing\04`, `/trailing\04`}, // truncated escape stays as is
		{`/bad\09x`, `/bad\09x`},         // not octal
	}
	for _, tc := range tests {
		if got := unescapeMount(tc.in); got != tc.want {
			t.Errorf("unescapeMount(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseMountInfo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	content := "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		"garbage line\n" +
		"36 35 98:0 /mnt1 /mnt\\0402 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n" +
		"40 22 0:5 / /dev rw - devtmpfs\n" // truncated after the separator: skipped
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := parseMountInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []mountEntry{
		{dev: "8:1", mountPoint: "/", fsType: "ext4", source: "/dev/sda1"},
		{dev: "98:0", mountPoint: "/mnt 2", fsType: "ext3", source: "/dev/root"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseMountInfo = %+v, want %+v", got, want)
	}
	if _, err := parseMountInfo(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("parseMountInfo of a missing file: want an error")
	}
}

func TestParseSwaps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "swaps")
	content := "Filename\tType\tSize\tUsed\tPriority\n/dev/sdb2 partition 1048572 0 -2\n/swapfile file 1000 0 -3\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := parseSwaps(path)
	if err != nil || !reflect.DeepEqual(got, []string{"/dev/sdb2"}) {
		t.Errorf("parseSwaps = %q, %v; want [/dev/sdb2]", got, err)
	}
	if got, err := parseSwaps(filepath.Join(dir, "none")); err != nil || got != nil {
		t.Errorf("parseSwaps(missing) = %q, %v; want nothing, nil", got, err)
	}
}

func TestSameBlockDev(t *testing.T) {
	tests := []struct {
		source, name string
		want         bool
	}{
		{"/dev/sdb1", "sdb1", true},
		{"/dev/sdb1", "sdb", false},
		{"sdb1", "sdb1", false}, // not a /dev path (e.g. a network source)
		{"tmpfs", "tmpfs", false},
	}
	for _, tc := range tests {
		if got := sameBlockDev(tc.source, tc.name); got != tc.want {
			t.Errorf("sameBlockDev(%q, %q) = %v, want %v", tc.source, tc.name, got, tc.want)
		}
	}
}
