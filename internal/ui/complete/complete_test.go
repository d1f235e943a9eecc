package complete

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// TestTargets: the readers and disks listed (a list that fails leaves
// its targets out), the prefixes, and after sim: or file: the paths,
// directories going on with a slash and hidden files only when asked.
func TestTargets(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"card.img", "cards/", ".hidden"} {
		p := filepath.Join(dir, name)
		if name[len(name)-1] == '/' {
			os.Mkdir(p, 0o755)
		} else {
			os.WriteFile(p, nil, 0o644)
		}
	}
	readers := func(context.Context) ([]usbdev.Info, error) {
		return []usbdev.Info{{VID: 0x0bda, PID: 0x0158, Serial: "X1", Supported: true, Manufacturer: "Realtek", Product: "Card Reader"},
			{VID: 0x1234, PID: 0x5678, Supported: false}}, nil
	}
	disks := func(context.Context) ([]drive.WholeDisk, error) {
		return []drive.WholeDisk{{Target: "disk:/dev/sdb", Name: "SD", Bus: "USB"}}, nil
	}
	failing := func(context.Context) ([]drive.WholeDisk, error) { return nil, errors.New("no") }
	for _, tc := range []struct {
		to    string
		disks func(context.Context) ([]drive.WholeDisk, error)
		want  []string
	}{
		{"", disks, []string{"usb:0bda:0158:X1\tRealtek Card Reader", "disk:/dev/sdb\tSD USB", "sim:\tthe simulated reader", "file:\tan image file", "disk:\ta whole disk"}},
		{"", failing, []string{"usb:0bda:0158:X1\tRealtek Card Reader", "sim:\tthe simulated reader", "file:\tan image file", "disk:\ta whole disk"}},
		{"sim:" + dir + "/ca", disks, []string{"sim:" + dir + "/card.img", "sim:" + dir + "/cards/"}},
		{"file:" + dir + "/.h", disks, []string{"file:" + dir + "/.hidden"}},
	} {
		if got := Targets(context.Background(), readers, tc.disks, tc.to); !slices.Equal(got, tc.want) {
			t.Errorf("Targets(%q) = %q, want %q", tc.to, got, tc.want)
		}
	}
}
