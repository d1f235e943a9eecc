package dist

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

var commitTime = time.Date(2026, 12, 2, 15, 6, 44, 0, time.UTC)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		describe string
		modified bool
		want     string // deb's spelling
		apk      string // apk's prerelease
	}{
		{"v1.2.3", false, "1.2.3", ""},
		{"1.2.3", false, "1.2.3", ""},
		{"v1.2.3-4-gabcdef0", false, "1.2.3+git20261202150644.abcdef0", "git20261202150644"},
		{"v1.2.3-dirty", true, "1.2.3+git20261202150644.abcdef0.dirty", "git20261202150644"},
		{"abcdef0", false, "0.0.0+git20261202150644.abcdef0", "git20261202150644"},
		{"abcdef0-dirty", true, "0.0.0+git20261202150644.abcdef0.dirty", "git20261202150644"},
		{"vnext", false, "0.0.0+git20261202150644.abcdef0", "git20261202150644"},
	} {
		v := ParseVersion(Stamp{Describe: tc.describe, Revision: "abcdef0123456789", Time: commitTime, Modified: tc.modified})
		if got := v.String(); got != tc.want {
			t.Errorf("%q: version %q, want %q", tc.describe, got, tc.want)
		}
		if v.Snapshot != tc.apk {
			t.Errorf("%q: snapshot %q, want %q", tc.describe, v.Snapshot, tc.apk)
		}
	}
}

func TestLDFlagsStampCommit(t *testing.T) {
	s := Stamp{Describe: "v1.0.0", Revision: "abc", Time: commitTime.In(time.FixedZone("x", 3600))}
	got := s.LDFlags()
	for _, want := range []string{"-buildid=", "-X main.stampedVersion=v1.0.0", "-X main.stampedRevision=abc",
		"-X main.stampedTime=2026-12-02T15:06:44Z", "-X main.stampedModified=false"} {
		if !strings.Contains(got, want) {
			t.Errorf("ldflags %q lack %q", got, want)
		}
	}
}

func testDocs() *docs {
	return &docs{
		man:      map[string][]byte{"usbflash.1.gz": []byte("page"), "usbflash-write.1.gz": []byte("write page")},
		manNames: []string{"usbflash-write.1.gz", "usbflash.1.gz"},
		bash:     []byte("bash"), zsh: []byte("#compdef usbflash"), fish: []byte("fish"), readme: []byte("readme"),
	}
}

type entry struct {
	name  string
	mode  int64
	mtime time.Time
	owner string
	data  string
}

func readTar(t *testing.T, r io.Reader) []entry {
	t.Helper()
	tr := tar.NewReader(r)
	var out []entry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{strings.TrimPrefix(h.Name, "./"), h.Mode, h.ModTime.UTC(), h.Uname, string(b)})
	}
}

func TestTarballIsTheSameWhateverTheOrder(t *testing.T) {
	fs := payload([]byte("binary"), testDocs())
	var a, b bytes.Buffer
	if err := writeTarball(&a, "usbflash-1.0.0-linux-amd64", fs, commitTime); err != nil {
		t.Fatal(err)
	}
	reversed := slices.Clone(fs)
	slices.Reverse(reversed)
	if err := writeTarball(&b, "usbflash-1.0.0-linux-amd64", reversed, commitTime); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the tarball's bytes depend on the order of the files")
	}
	z, err := gzip.NewReader(&a)
	if err != nil {
		t.Fatal(err)
	}
	if z.Name != "" || !z.ModTime.IsZero() {
		t.Errorf("gzip header names %q, time %v: want neither", z.Name, z.ModTime)
	}
	entries := readTar(t, z)
	want := map[string]int64{
		"usbflash-1.0.0-linux-amd64/":                          0o755,
		"usbflash-1.0.0-linux-amd64/usbflash":                  0o755,
		"usbflash-1.0.0-linux-amd64/70-usbflash.rules":         0o644,
		"usbflash-1.0.0-linux-amd64/usbflash-station.service":  0o644,
		"usbflash-1.0.0-linux-amd64/README.md":                 0o644,
		"usbflash-1.0.0-linux-amd64/completions/":              0o755,
		"usbflash-1.0.0-linux-amd64/completions/usbflash.bash": 0o644,
		"usbflash-1.0.0-linux-amd64/completions/_usbflash":     0o644,
		"usbflash-1.0.0-linux-amd64/completions/usbflash.fish": 0o644,
		"usbflash-1.0.0-linux-amd64/man/":                      0o755,
		"usbflash-1.0.0-linux-amd64/man/usbflash.1.gz":         0o644,
		"usbflash-1.0.0-linux-amd64/man/usbflash-write.1.gz":   0o644,
	}
	seen := map[string]bool{}
	for _, e := range entries {
		mode, ok := want[e.name]
		if !ok {
			t.Errorf("unexpected %s", e.name)
			continue
		}
		if seen[e.name] {
			t.Errorf("%s twice", e.name)
		}
		seen[e.name] = true
		if e.mode != mode || !e.mtime.Equal(commitTime) || e.owner != "root" {
			t.Errorf("%s: mode %o, time %v, owner %q; want %o, %v, root", e.name, e.mode, e.mtime, e.owner, mode, commitTime)
		}
		if dir := e.name[:strings.LastIndex(strings.TrimSuffix(e.name, "/"), "/")+1]; dir != "" && !seen[dir] {
			t.Errorf("%s comes before its directory %s", e.name, dir)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d entries, want %d", len(seen), len(want))
	}
}

// arMember is the named member of a deb (an ar archive).
func arMember(t *testing.T, deb []byte, name string) []byte {
	t.Helper()
	if !bytes.HasPrefix(deb, []byte("!<arch>\n")) {
		t.Fatal("not an ar archive")
	}
	for rest := deb[8:]; len(rest) >= 60; {
		h := rest[:60]
		size, err := strconv.Atoi(strings.TrimSpace(string(h[48:58])))
		if err != nil {
			t.Fatal(err)
		}
		data := rest[60 : 60+size]
		if strings.TrimRight(strings.TrimSpace(string(h[:16])), "/") == name {
			return data
		}
		rest = rest[60+size+size%2:]
	}
	t.Fatalf("no %s in the deb", name)
	return nil
}

// packageFiles builds a package of format and lists what it installs.
func packageFiles(t *testing.T, format string, fs []file) ([]byte, map[string]entry) {
	t.Helper()
	dir := t.TempDir()
	v := ParseVersion(Stamp{Describe: "v1.2.3-4-gabcdef0", Revision: "abcdef0123", Time: commitTime})
	name, err := writePackage(dir, format, Platforms()[0], v, Stamp{Revision: "abcdef0123", Time: commitTime}, fs, t.TempDir(), Signing{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	var entries []entry
	switch format {
	case "deb":
		z, err := gzip.NewReader(bytes.NewReader(arMember(t, b, "data.tar.gz")))
		if err != nil {
			t.Fatal(err)
		}
		entries = readTar(t, z)
	case "apk":
		// Gzip streams one after another: control, then data.
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		entries = readTar(t, z)
	}
	out := map[string]entry{}
	for _, e := range entries {
		out["/"+e.name] = e
	}
	return b, out
}

func TestPackagesHoldEveryFileWhereTheirSystemLooks(t *testing.T) {
	fs := payload([]byte("binary"), testDocs())
	for _, tc := range []struct {
		format string
		zsh    string
		deb    bool
	}{
		{"deb", "/usr/share/zsh/vendor-completions/_usbflash", true},
		{"apk", "/usr/share/zsh/site-functions/_usbflash", false},
	} {
		t.Run(tc.format, func(t *testing.T) {
			b, got := packageFiles(t, tc.format, fs)
			want := map[string]string{
				"/usr/bin/usbflash":                                  "binary",
				RulePath:                                             string(udevRule),
				"/usr/share/man/man1/usbflash.1.gz":                  "page",
				"/usr/share/man/man1/usbflash-write.1.gz":            "write page",
				"/usr/share/bash-completion/completions/usbflash":    "bash",
				"/usr/share/fish/vendor_completions.d/usbflash.fish": "fish",
				tc.zsh: "#compdef usbflash",
			}
			for path, data := range want {
				e, ok := got[path]
				switch {
				case !ok:
					t.Errorf("no %s", path)
				case e.data != data:
					t.Errorf("%s holds %q, want %q", path, e.data, data)
				case !e.mtime.Equal(commitTime):
					t.Errorf("%s dated %v, want the commit's %v", path, e.mtime, commitTime)
				}
			}
			// The station's unit is in the deb, not in Alpine's apk (OpenRC).
			if e, ok := got[UnitPath]; ok != tc.deb || (ok && e.data != string(stationUnit)) {
				t.Errorf("%s: %t, want %t", UnitPath, ok, tc.deb)
			}
			if _, ok := got["/usr/share/doc/usbflash/copyright"]; ok != tc.deb {
				t.Errorf("copyright file: %t, want %t", ok, tc.deb)
			}
			if e := got["/usr/bin/usbflash"]; e.mode&0o777 != 0o755 {
				t.Errorf("binary mode %o", e.mode)
			}
			// Another work directory, the same bytes.
			again, _ := packageFiles(t, tc.format, fs)
			if !bytes.Equal(b, again) {
				t.Error("two builds of the package differ")
			}
		})
	}
}

func TestRPMIsReproducible(t *testing.T) {
	fs := payload([]byte("binary"), testDocs())
	a, _ := packageFiles(t, "rpm", fs)
	b, _ := packageFiles(t, "rpm", fs)
	if !bytes.Equal(a, b) {
		t.Error("two builds of the rpm differ")
	}
	for _, want := range []string{"/usr/bin/usbflash", RulePath, UnitPath, "/usr/share/zsh/site-functions/_usbflash"} {
		if !bytes.Contains(a, []byte(filepath.Base(want))) {
			t.Errorf("the rpm does not name %s", want)
		}
	}
}

func TestUdevRuleMatchesOnlyWhatUsbflashOpens(t *testing.T) {
	var active []string
	for _, line := range strings.Split(string(udevRule), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			active = append(active, line)
		}
	}
	if len(active) != 1 {
		t.Fatalf("%d active rules, want 1: %q", len(active), active)
	}
	// By default the readers go to a group an administrator fills, never
	// to whoever sits at the seat: a member can write every USB disk raw,
	// the machine's own too when it runs from USB (issue 41).
	match := `ACTION!="remove", SUBSYSTEM=="usb", ENV{DEVTYPE}=="usb_device", ENV{ID_USB_INTERFACES}=="*:080[12356]50:*|*:080662:*"`
	for _, tc := range []struct {
		line       string
		want, not  []string
		commented  bool
		whatItDoes string
	}{
		{line: active[0], want: []string{match, `GROUP="` + Group + `"`, `MODE="0660"`}, not: []string{"uaccess", "0666", "OWNER"},
			whatItDoes: "the active rule: the group, read and write for it alone"},
		{line: "# " + match + `, TAG+="uaccess"`, want: []string{match, `TAG+="uaccess"`}, not: []string{"GROUP", "MODE"}, commented: true,
			whatItDoes: "the seat's variant, opt-in"},
	} {
		if tc.commented && !strings.Contains(string(udevRule), "\n"+tc.line+"\n") {
			t.Errorf("%s: no line %q", tc.whatItDoes, tc.line)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(tc.line, w) {
				t.Errorf("%s lacks %s: %q", tc.whatItDoes, w, tc.line)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(tc.line, n) {
				t.Errorf("%s has %s: %q", tc.whatItDoes, n, tc.line)
			}
		}
	}
	if got := path.Base(RulePath); got >= "73-seat-late.rules" {
		t.Errorf("%s sorts after 73-seat-late.rules: uaccess would grant nothing", got)
	}
	// The interfaces it matches (udev globs as path.Match does, there
	// being no slash) are the ones usbflash lists as supported.
	// udev takes "|" between alternatives.
	patterns := strings.Split(regexp.MustCompile(`ID_USB_INTERFACES}=="([^"]*)"`).FindStringSubmatch(active[0])[1], "|")
	for sub := range 256 {
		for _, proto := range []uint8{usbdev.ProtocolBOT, usbdev.ProtocolUAS, 0} {
			ifaces := fmt.Sprintf(":030000:08%02x%02x:", sub, proto)
			matched := false
			for _, p := range patterns {
				m, err := path.Match(p, ifaces)
				if err != nil {
					t.Fatal(err)
				}
				matched = matched || m
			}
			if supported, _ := usbdev.Classify(uint8(sub), proto); matched != supported {
				t.Errorf("interfaces %s: rule matches %t, usbflash supports %t", ifaces, matched, supported)
			}
		}
	}
}

// loopback says whether a listen address serves this machine alone.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// TestStationUnitFitsTheRuleAndTheStop: the packaged unit runs as the
// group the udev rule's station variant opens the readers to, reaches
// usbfs through its device policy, and gives a stop more time than
// usbflash takes to finish the cards in flight; nothing enables it.
func TestStationUnitFitsTheRuleAndTheStop(t *testing.T) {
	settings := map[string][]string{}
	var execStart string
	lines := strings.Split(strings.ReplaceAll(string(stationUnit), "\\\n", " "), "\n")
	for _, line := range lines {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		settings[k] = append(settings[k], v)
		if k == "ExecStart" {
			execStart = v
		}
	}
	one := func(k string) string {
		if len(settings[k]) != 1 {
			t.Errorf("%s set %d times, want once", k, len(settings[k]))
			return ""
		}
		return settings[k][0]
	}
	if g := one("Group"); !strings.Contains(string(udevRule), `GROUP="`+g+`"`) {
		t.Errorf("Group=%s is not the udev rule's station group", g)
	}
	for k, want := range map[string]string{"KillSignal": "SIGTERM", "SendSIGHUP": "no", "DevicePolicy": "closed",
		"DeviceAllow": "char-usb_device rw", "LogsDirectory": "usbflash", "StateDirectory": "usbflash", "WantedBy": "multi-user.target"} {
		if got := one(k); got != want {
			t.Errorf("%s=%s, want %s", k, got, want)
		}
	}
	if _, ok := settings["PrivateDevices"]; ok {
		t.Error("PrivateDevices= hides /dev/bus/usb")
	}
	args := strings.Fields(execStart)
	flag := func(name string) string {
		i := slices.Index(args, name)
		if i < 0 || i+1 >= len(args) {
			t.Errorf("ExecStart has no %s: %s", name, execStart)
			return ""
		}
		return args[i+1]
	}
	if !slices.Contains(args, "--watch") {
		t.Errorf("ExecStart does not watch: %s", execStart)
	}
	if dir := flag("--log-dir"); dir != "/var/log/usbflash" {
		t.Errorf("--log-dir %s is not LogsDirectory's", dir)
	}
	if report := flag("--report"); !strings.HasPrefix(report, "/var/lib/usbflash/") {
		t.Errorf("--report %s is not under StateDirectory", report)
	}
	// Metrics carry no authentication: loopback only, unless the owner
	// says otherwise in a drop-in.
	if addr := flag("--metrics-listen"); !loopback(addr) {
		t.Errorf("--metrics-listen %s serves the metrics beyond this machine, without authentication", addr)
	}
	stop, err := time.ParseDuration(flag("--stop-timeout"))
	if err != nil {
		t.Fatal(err)
	}
	// systemd's "11min" is Go's "11m".
	kill, err := time.ParseDuration(strings.TrimSuffix(one("TimeoutStopSec"), "in"))
	if err != nil {
		t.Fatal(err)
	}
	if kill <= stop {
		t.Errorf("TimeoutStopSec %v is not longer than --stop-timeout %v: SIGKILL comes first", kill, stop)
	}
	if strings.Contains(string(postInstall), "systemctl") {
		t.Error("the postinstall touches systemd units: the station is enabled by its owner")
	}
}
