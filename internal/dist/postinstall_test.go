package dist

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
)

// TestPostInstallCreatesTheGroup: the packages' postinstall makes the
// group the udev rule opens readers to, once and empty, with the tool the
// system has (shadow's groupadd, busybox's addgroup on Alpine), into
// dpkg's --root when it installs into one (busybox's addgroup has no
// such option: nothing then); a group that exists is left alone, a failure to make it is said and fails nothing; udev is reloaded
// where it runs. The postremove reloads udev and leaves the group. The
// system's tools are stand-ins that record how they were called.
func TestPostInstallCreatesTheGroup(t *testing.T) {
	if !strings.Contains(string(postInstall), "\ngroup="+Group+"\n") || !strings.Contains(string(udevRule), `GROUP="`+Group+`"`) || Group != drive.RuleGroup {
		t.Fatalf("the postinstall does not create the rule's group %s, which usbflash's advice names (%s)", Group, drive.RuleGroup)
	}
	for _, tc := range []struct {
		name   string
		script []byte
		tools  map[string]int // tool -> its exit status; absent: not installed
		root   bool           // dpkg --root: DPKG_ROOT is set
		want   []string       // the calls, in order
		stderr string
	}{
		{name: "groupadd", script: postInstall, tools: map[string]int{"getent": 2, "groupadd": 0, "udevadm": 0},
			want: []string{"getent group " + Group, "groupadd --force --system " + Group, "udevadm control --reload-rules", "udevadm trigger --subsystem-match=usb --action=change"}},
		{name: "busybox addgroup", script: postInstall, tools: map[string]int{"getent": 2, "addgroup": 0},
			want: []string{"getent group " + Group, "addgroup -S " + Group}},
		{name: "the group exists", script: postInstall, tools: map[string]int{"getent": 0, "groupadd": 0, "addgroup": 0},
			want: []string{"getent group " + Group}},
		{name: "groupadd fails", script: postInstall, tools: map[string]int{"getent": 2, "groupadd": 10},
			want: []string{"getent group " + Group, "groupadd --force --system " + Group}, stderr: "could not create the group " + Group},
		// Under dpkg --root the host's groups do not count, and groupadd
		// --force finds whether the root has it.
		{name: "dpkg --root", script: postInstall, tools: map[string]int{"getent": 0, "groupadd": 0, "addgroup": 0}, root: true,
			want: []string{"groupadd --force --system --prefix ROOT " + Group}},
		{name: "dpkg --root, busybox only", script: postInstall, tools: map[string]int{"getent": 2, "addgroup": 0}, root: true},
		{name: "no udev, no tools", script: postInstall, tools: map[string]int{}},
		{name: "postremove", script: postRemove, tools: map[string]int{"getent": 0, "groupadd": 0, "groupdel": 0, "udevadm": 0},
			want: []string{"udevadm control --reload-rules", "udevadm trigger --subsystem-match=usb --action=change"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin, calls := filepath.Join(dir, "bin"), filepath.Join(dir, "calls")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			for tool, status := range tc.tools {
				stub := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >>%s\nexit %d\n", tool, calls, status)
				if err := os.WriteFile(filepath.Join(bin, tool), []byte(stub), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			env := []string{"PATH=" + bin}
			root := filepath.Join(dir, "root")
			if tc.root {
				env = append(env, "DPKG_ROOT="+root)
			}
			script := filepath.Join(dir, "script.sh")
			if err := os.WriteFile(script, tc.script, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("/bin/sh", script, "configure")
			cmd.Env = env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("the script failed: %v\n%s", err, stderr.String())
			}
			b, _ := os.ReadFile(calls)
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(strings.ReplaceAll(string(b), root, "ROOT")), "\n") {
				if l != "" {
					got = append(got, l)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
			if !strings.Contains(stderr.String(), tc.stderr) || (tc.stderr == "" && stderr.Len() > 0) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.stderr)
			}
		})
	}
}
