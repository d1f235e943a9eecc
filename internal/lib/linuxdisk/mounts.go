package linuxdisk

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// mountEntry is one line of /proc/self/mountinfo reduced to what the
// in-use check needs.
type mountEntry struct {
	dev        string // "major:minor" as the kernel reports it
	mountPoint string
	fsType     string
	source     string // e.g. "/dev/sdb1"
}

// parseMountInfo reads proc(5) mountinfo: field 3 is major:minor, field 5 the
// mount point (octal-escaped), and after the "-" separator come the
// filesystem type and the source. Malformed lines are skipped: one odd line
// must not hide the others.
func parseMountInfo(path string) ([]mountEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
			continue
		}
		out = append(out, mountEntry{
			dev:        fields[2],
			mountPoint: unescapeMount(fields[4]),
			fsType:     fields[sep+1],
			source:     unescapeMount(fields[sep+2]),
		})
	}
	return out, sc.Err()
}

// parseSwaps reads /proc/swaps (header line, then "Filename Type ...").
// A missing file means no swap support: not an error.
func parseSwaps(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for i, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if i == 0 || len(fields) < 2 || fields[1] != "partition" {
			continue
		}
		out = append(out, unescapeMount(fields[0]))
	}
	return out, nil
}

// unescapeMount undoes the kernel's octal escaping of space, tab, newline
// and backslash (\040 and friends) in mount table fields.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sameBlockDev tells whether a mount-table source names the block device
// called name ("sdb1"). Sources may be symlinks (/dev/disk/by-uuid/...,
// /dev/mapper/...): they are resolved when they exist on this machine.
func sameBlockDev(source, name string) bool {
	if !strings.HasPrefix(source, "/dev/") {
		return false
	}
	if resolved, err := filepath.EvalSymlinks(source); err == nil {
		source = resolved
	}
	return filepath.Base(source) == name
}
