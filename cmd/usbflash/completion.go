package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/usbms/backend"

	"github.com/spf13/cobra"
)

// completeTarget completes a TARGET argument: the usb: targets of the
// readers attached now (as 'usbflash list' finds them, without claiming
// anything; those of --readers when it names simulated ones), the
// disk: targets list shows, the sim: and file: prefixes, and paths after
// them.
func completeTarget(c *cobra.Command, toComplete string) ([]string, cobra.ShellCompDirective) {
	for _, prefix := range []string{"sim:", "file:"} {
		if path, ok := strings.CutPrefix(toComplete, prefix); ok {
			return completePath(prefix, path), cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
		}
	}
	var out []string
	list := backend.List
	// The readers --readers names, when the line gives it.
	if setting, err := c.Flags().GetString("readers"); err == nil {
		if bus, err := drive.ParseReaders(setting); err == nil && bus != nil {
			list = bus.List
		}
	}
	if infos, err := list(c.Context()); err == nil {
		for _, info := range infos {
			if info.Supported {
				out = append(out, drive.USBName(info)+"\t"+strings.TrimSpace(info.Manufacturer+" "+info.Product))
			}
		}
	}
	if disks, err := drive.ListDisks(c.Context()); err == nil {
		for _, d := range disks {
			out = append(out, d.Target+"\t"+strings.TrimSpace(d.Name+" "+d.Bus))
		}
	}
	out = append(out, "sim:\tthe simulated reader", "file:\tan image file", "disk:\ta whole disk")
	return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// completePath lists the entries of the directory partial names that start
// with its last element, behind prefix; directories end in a slash so the
// shell keeps completing into them.
func completePath(prefix, partial string) []string {
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

// targetArgs completes the arguments of commands taking IMAGE TARGET or
// TARGET: files for the image, targets for the target.
func targetArgs(imageFirst bool) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch {
		case imageFirst && len(args) == 0:
			return nil, cobra.ShellCompDirectiveDefault
		case imageFirst && len(args) == 1, !imageFirst && len(args) == 0:
			return completeTarget(c, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTransferSize suggests the transfer sizes worth trying.
func completeTransferSize(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{
		"1MiB\tthe default: a USB 2 link 93% busy",
		"512KiB\tfor readers that refuse larger commands",
		"4MiB\tfast USB 3 readers with large images",
		"32MiB\tthe largest worth trying",
	}, cobra.ShellCompDirectiveNoFileComp
}
