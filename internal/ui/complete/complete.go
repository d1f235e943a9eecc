// Package complete is what the shell completes on usbflash's command
// lines, each candidate with what it is after a tab: a TARGET (the
// readers attached now, as list finds them without claiming anything,
// the disk: targets list shows, the sim: and file: prefixes and the paths
// after them) and the transfer sizes worth trying.
package complete

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Targets are the TARGETs that complete toComplete: readers lists the
// readers (the machine's USB ones, or a bus of simulated ones), disks the
// whole disks disk: writes; a failure of either leaves its targets out.
// Every candidate is one the shell adds no space after (a path goes on).
func Targets(ctx context.Context, readers func(context.Context) ([]usbdev.Info, error),
	disks func(context.Context) ([]drive.WholeDisk, error), toComplete string) []string {
	for _, prefix := range []string{"sim:", "file:"} {
		if path, ok := strings.CutPrefix(toComplete, prefix); ok {
			return paths(prefix, path)
		}
	}
	var out []string
	if infos, err := readers(ctx); err == nil {
		for _, info := range infos {
			if info.Supported {
				out = append(out, drive.USBName(info)+"\t"+strings.TrimSpace(info.Manufacturer+" "+info.Product))
			}
		}
	}
	if ds, err := disks(ctx); err == nil {
		for _, d := range ds {
			out = append(out, d.Target+"\t"+strings.TrimSpace(d.Name+" "+d.Bus))
		}
	}
	return append(out, "sim:\tthe simulated reader", "file:\tan image file", "disk:\ta whole disk")
}

// paths lists the entries of the directory partial names that start with
// its last element, behind prefix; directories end in a slash so the
// shell keeps completing into them.
func paths(prefix, partial string) []string {
	dir, base := filepath.Split(partial)
	read := dir
	if read == "" {
		read = "."
	}
	entries, err := os.ReadDir(read)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		if e.IsDir() {
			name += "/"
		}
		out = append(out, prefix+dir+name)
	}
	return out
}

// TransferSizes are the transfer sizes worth trying.
func TransferSizes() []string {
	return []string{
		"1MiB\tthe default: a USB 2 link 93% busy",
		"512KiB\tfor readers that refuse larger commands",
		"4MiB\tfast USB 3 readers with large images",
		"32MiB\tthe largest worth trying",
	}
}
