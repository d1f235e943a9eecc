package customize

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// raspiosBoot is what a Raspberry Pi OS (Bookworm) boot partition holds
// that customisation reads.
var raspiosBoot = map[string]string{
	"cmdline.txt": "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait quiet init=/usr/lib/raspberrypi-sys-mods/firstboot\n",
	"config.txt":  "# For more options\n#dtparam=i2c_arm=on\ndtparam=audio=on\n",
	"issue.txt":   "Raspberry Pi reference 2024-11-19\n",
}

// trixieBoot adds the cloud-init seed of Raspberry Pi OS Trixie.
var trixieBoot = map[string]string{
	"cmdline.txt":    "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait\n",
	"config.txt":     "dtparam=audio=on\n",
	"issue.txt":      "Raspberry Pi reference 2025-11-24\n",
	"user-data":      "#cloud-config\n",
	"meta-data":      "instance-id: rpios-image\n",
	"network-config": "network:\n  version: 2\n",
}

var fixedNow = func() time.Time { return time.UnixMilli(1764700000000) }

func testConfig() Config {
	return Config{Hostname: "station-{n}", User: "maker", Password: "s3cret", SSHKeys: []string{keyEd25519 + " maker@host"},
		WiFi: WiFi{SSID: "Workshop", Password: "correct horse", Country: "GB"}, Keymap: "gb", Timezone: "Europe/London",
		ConfigTxt: []string{"dtparam=i2c_arm=on", "enable_uart=1"}}
}

func TestApplyFATs(t *testing.T) {
	extra := filepath.Join(t.TempDir(), "payload.bin")
	payload := bytes.Repeat([]byte("usbflash customise "), 20000) // 380 KB: many clusters, through fragments
	if err := os.WriteFile(extra, payload, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec fatSpec
	}{
		{"FAT12 512B clusters", fatSpec{fat: "12", kib: 2048, cluster: 1}},
		{"FAT12 32KiB clusters", fatSpec{fat: "12", kib: 8192, cluster: 64}},
		{"FAT16 2KiB clusters", fatSpec{fat: "16", kib: 32768, cluster: 4}},
		{"FAT16 32KiB clusters", fatSpec{fat: "16", kib: 130 << 10, cluster: 64}},
		{"FAT16 nearly full root directory", fatSpec{fat: "16", kib: 32768, rootDir: 32}},
		{"FAT16 fragmented", fatSpec{fat: "16", kib: 32768, cluster: 1, fragment: 64}},
		{"FAT32 512B clusters", fatSpec{fat: "32", kib: 66 << 10, cluster: 1}},
		{"FAT32 1KiB clusters fragmented", fatSpec{fat: "32", kib: 130 << 10, cluster: 2, fragment: 96}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.files = raspiosBoot
			if tc.spec.rootDir > 0 {
				// Nearly full: 16 more short names leave 13 entries for the
				// 4 files (some with long names) customisation adds.
				tc.spec.files = map[string]string{}
				for k, v := range raspiosBoot {
					tc.spec.files[k] = v
				}
				for i := range 16 {
					tc.spec.files["OVL"+itoa(i)+".DTB"] = "x"
				}
			}
			disk := makeDisk(t, tc.spec)
			c := testConfig()
			c.Files = map[string]string{"overlays/a long payload name.bin": extra}
			c = c.Expand(Vars{N: 3})
			res, err := Apply(disk, 512, c, Options{Now: fixedNow})
			if err != nil {
				t.Fatal(err)
			}
			if res.Format != FormatSystemd || res.FAT != "FAT"+tc.spec.fat || res.Why == "" {
				t.Fatalf("result %+v", res)
			}
			got := checkFS(t, disk, "cmdline.txt", "config.txt", "firstrun.sh", "overlays/a long payload name.bin")
			if want := strings.TrimSpace(raspiosBoot["cmdline.txt"]) + systemdRun; got["cmdline.txt"] != want {
				t.Errorf("cmdline.txt = %q, want %q", got["cmdline.txt"], want)
			}
			if want := "# For more options\ndtparam=i2c_arm=on\ndtparam=audio=on\nenable_uart=1\n"; got["config.txt"] != want {
				t.Errorf("config.txt = %q, want %q", got["config.txt"], want)
			}
			if !strings.Contains(got["firstrun.sh"], "NEW_HOSTNAME='station-3'\n") {
				t.Errorf("firstrun.sh does not set the hostname:\n%s", got["firstrun.sh"])
			}
			if got["overlays/a long payload name.bin"] != string(payload) {
				t.Errorf("the extra file reads back as %d bytes, want %d", len(got["overlays/a long payload name.bin"]), len(payload))
			}
		})
	}
}

// TestApplyTwice: a card customised again carries one command-line entry
// and the second run's files, the replaced ones freed (fsck finds no
// lost cluster).
func TestApplyTwice(t *testing.T) {
	for _, boot := range []map[string]string{raspiosBoot, trixieBoot} {
		disk := makeDisk(t, fatSpec{fat: "32", kib: 66 << 10, files: boot})
		var last Result
		for i := range 3 {
			c := testConfig()
			c.Hostname = "h" + itoa(i)
			res, err := Apply(disk, 512, c.Expand(Vars{N: i}), Options{Now: fixedNow, Card: i})
			if err != nil {
				t.Fatal(err)
			}
			last = res
		}
		got := checkFS(t, disk, "cmdline.txt")
		line := got["cmdline.txt"]
		if n := strings.Count(line, "systemd.run=") + strings.Count(line, "ds=nocloud"); n != 1 {
			t.Errorf("%s: cmdline.txt has %d customisation entries: %q", last.Format, n, line)
		}
		if last.Format == FormatCloudInitRPi && !strings.HasSuffix(line, " ds=nocloud;i=usbflash-1764700000000-2") {
			t.Errorf("cmdline.txt = %q: not the last run's instance", line)
		}
	}
}

func TestApplyFormats(t *testing.T) {
	hashFile := func(res Result, name string) bool {
		for _, f := range res.Files {
			if f.Name == name && len(f.SHA256) == 64 {
				return true
			}
		}
		return false
	}
	tests := []struct {
		name   string
		boot   map[string]string
		format string
		want   Format
		files  []string
		err    error
	}{
		{"bookworm auto", raspiosBoot, "", FormatSystemd, []string{"config.txt", "firstrun.sh", "cmdline.txt"}, nil},
		{"trixie auto", trixieBoot, "auto", FormatCloudInitRPi, []string{"config.txt", "meta-data", "user-data", "network-config", "cmdline.txt"}, nil},
		{"ubuntu auto", map[string]string{"cmdline.txt": "root=LABEL=writable\n", "user-data": "#cloud-config\n", "README": "ubuntu"}, "", FormatCloudInit, []string{"config.txt", "meta-data", "user-data", "network-config", "cmdline.txt"}, nil},
		{"preseed auto", map[string]string{"cmdline.txt": "root=x\n", "rpi-preseed.toml": "# filled in by the imager\n", "config.txt": "\n"}, "", FormatPreseed, []string{"config.txt", "rpi-preseed.toml"}, nil},
		{"preseed asked", raspiosBoot, "rpi-preseed", FormatPreseed, []string{"config.txt", "rpi-preseed.toml"}, nil},
		{"unknown image refused", map[string]string{"kernel.img": "k"}, "", "", nil, ErrUnrecognised},
		{"unknown image, format given", map[string]string{"kernel.img": "k"}, "cloudinit", FormatCloudInit, []string{"config.txt", "meta-data", "user-data", "network-config"}, nil},
		{"empty file replaced", map[string]string{"cmdline.txt": "root=x\n", "rpi-preseed.toml": "", "config.txt": "x=1\n"}, "", "", nil, ErrEmptyFile},
		{"systemd without cmdline.txt", map[string]string{"kernel.img": "k"}, "systemd", "", nil, ErrNoCmdline},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			disk := makeDisk(t, fatSpec{fat: "16", kib: 32768, files: tc.boot})
			before := bytes.Clone(disk)
			c := testConfig()
			c.InitFormat = tc.format
			res, err := Apply(disk, 512, c, Options{Now: fixedNow})
			if !errors.Is(err, tc.err) {
				t.Fatalf("Apply: %v, want %v", err, tc.err)
			}
			if err != nil {
				if failure.Of(err) != failure.Refused {
					t.Errorf("class %v, want refused", failure.Of(err))
				}
				if !bytes.Equal(before, disk) {
					t.Error("a refused customisation changed the disk")
				}
				return
			}
			var names []string
			for _, f := range res.Files {
				names = append(names, f.Name)
				if !hashFile(res, f.Name) {
					t.Errorf("%s has no SHA-256", f.Name)
				}
			}
			if res.Format != tc.want || strings.Join(names, " ") != strings.Join(tc.files, " ") {
				t.Fatalf("wrote %s %v, want %s %v", res.Format, names, tc.want, tc.files)
			}
			if (tc.format == "" || tc.format == "auto") != (res.Why != "") {
				t.Errorf("why %q for format %q", res.Why, tc.format)
			}
			checkFS(t, disk, names...)
		})
	}
}

func TestApplyFull(t *testing.T) {
	disk := makeDisk(t, fatSpec{fat: "12", kib: 2048, files: raspiosBoot, fill: true})
	after := bytes.Clone(disk[len(disk)-partStart:])
	_, err := Apply(disk, 512, testConfig(), Options{Now: fixedNow})
	if !errors.Is(err, ErrFull) || failure.Of(err) != failure.Refused {
		t.Fatalf("Apply on a full boot partition: %v", err)
	}
	if !bytes.Equal(after, disk[len(disk)-partStart:]) {
		t.Error("a write landed past the boot partition")
	}
}

func TestConfigCheck(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		ok   bool
	}{
		{"plain", testConfig(), true},
		{"password and hash", Config{Password: "a", PasswordHash: "$6$x$y"}, false},
		{"hash not crypt", Config{PasswordHash: "plain"}, false},
		{"wifi password, no ssid", Config{WiFi: WiFi{Password: "12345678"}}, false},
		{"short passphrase", Config{WiFi: WiFi{SSID: "n", Password: "1234567"}}, false},
		{"64 hex key", Config{WiFi: WiFi{SSID: "n", Password: strings.Repeat("ab", 32)}}, true},
		{"64 not hex", Config{WiFi: WiFi{SSID: "n", Password: strings.Repeat("xy", 32)}}, false},
		{"bad format", Config{InitFormat: "netplan"}, false},
		{"file leaves the partition", Config{Files: map[string]string{"../x": "/dev/null"}}, false},
		{"missing script", Config{FirstRun: "/nonexistent/firstrun.sh"}, false},
	}
	for _, tc := range tests {
		err := tc.c.Check()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Check = %v", tc.name, err)
		}
		if err != nil && failure.Of(err) != failure.Usage {
			t.Errorf("%s: class %v, want usage", tc.name, failure.Of(err))
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	toml := "hostname = \"pi-{n}\"\nuser = \"maker\"\nssh_keys = [\"" + keyEd25519 + " k\"]\nfirst_run = \"run.sh\"\n[wifi]\nssid = \"Net\"\npassword = \"passphrase\"\n"
	yaml := "hostname: pi-{n}\nuser: maker\nssh_keys: [\"" + keyEd25519 + " k\"]\nfirst_run: run.sh\nwifi:\n  ssid: Net\n  password: passphrase\n"
	for name, text := range map[string]string{"c.toml": toml, "c.yaml": yaml, "bad.toml": toml + "colour = 1\n", "bad.yml": yaml + "colour: 1\n", "c.json": "{}"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(p)
		if strings.HasPrefix(name, "c.") && name != "c.json" {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if c.Hostname != "pi-{n}" || c.WiFi.SSID != "Net" || len(c.SSHKeys) != 1 || c.FirstRun != filepath.Join(dir, "run.sh") || !c.Templated() {
				t.Errorf("%s: %+v", name, c)
			}
			continue
		}
		if err == nil || failure.SettingOf(err) != SettingFile {
			t.Errorf("%s: Load = %v, want an error about the file", name, err)
		}
	}
}

func TestMergeAndKeys(t *testing.T) {
	no := false
	file := Config{Hostname: "from-file", User: "maker", SSHKeys: []string{keyEd25519}, WiFi: WiFi{SSID: "Net", Password: "passphrase"}}
	got := file.Merge(Config{Hostname: "from-flag", SSHKeys: []string{keyECDSA}, SSHPasswordAuth: &no, WiFi: WiFi{Country: "FR"}})
	if got.Hostname != "from-flag" || got.User != "maker" || len(got.SSHKeys) != 2 || got.SSHPasswordAuth != &no ||
		got.WiFi != (WiFi{SSID: "Net", Password: "passphrase", Country: "FR"}) {
		t.Errorf("Merge = %+v", got)
	}
	pub := filepath.Join(t.TempDir(), "keys.pub")
	if err := os.WriteFile(pub, []byte("# mine\n"+keyEd25519+" one\n\n"+keyECDSA+" two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		value string
		want  int
		ok    bool
	}{{keyEd25519 + " me@host", 1, true}, {pub, 2, true}, {"ssh-ed25519 AAA me@host", 0, false}, {filepath.Join(t.TempDir(), "none.pub"), 0, false}} {
		keys, err := ReadKeys(tc.value)
		if (err == nil) != tc.ok || len(keys) != tc.want {
			t.Errorf("ReadKeys(%q) = %q, %v", tc.value, keys, err)
		}
		if err != nil && failure.SettingOf(err) != SettingSSHKey {
			t.Errorf("ReadKeys(%q): %v is not about the key setting", tc.value, err)
		}
	}
}

// TestCompose: a file's settings replace base's, the caller's own go over
// them with the keys they name, and a value of its own that breaks its
// rule is refused naming its setting.
func TestCompose(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pi.toml")
	if err := os.WriteFile(file, []byte("hostname = \"from-file\"\nuser = \"maker\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := &Config{Hostname: "from-base", Timezone: "Europe/London"}
	got, err := Compose(base, "", Config{User: "pi"}, []string{keyEd25519 + " me@host"})
	if err != nil || got.Hostname != "from-base" || got.Timezone != "Europe/London" || got.User != "pi" || len(got.SSHKeys) != 1 {
		t.Errorf("over base: %+v, %v", got, err)
	}
	got, err = Compose(base, file, Config{Hostname: "from-flag"}, nil)
	if err != nil || got.Hostname != "from-flag" || got.User != "maker" || got.Timezone != "" {
		t.Errorf("over a file: %+v, %v", got, err)
	}
	if got, err := Compose(nil, "", Config{}, nil); err != nil || !got.Empty() {
		t.Errorf("nothing asked: %+v, %v", got, err)
	}
	if _, err := Compose(nil, "", Config{Hostname: "a;b"}, nil); failure.SettingOf(err) != SettingHostname {
		t.Errorf("a bad hostname: %v, want an error about the hostname setting", err)
	}
}

// TestErrorTexts: the package's errors state facts, advice being the
// CLI's (internal/factsonly).
func TestErrorTexts(t *testing.T) {
	cases := []Config{
		{Password: "a", PasswordHash: "$6$x"}, {PasswordHash: "x"}, {WiFi: WiFi{Password: "12345678"}},
		{WiFi: WiFi{SSID: strings.Repeat("s", 33)}}, {WiFi: WiFi{SSID: "s", Password: "short"}},
		{SSHKeys: []string{keyEd25519 + "\n" + keyECDSA}}, {Files: map[string]string{"a:b": "x"}}, {InitFormat: "x"},
	}
	for _, c := range cases {
		err := c.Check()
		if err == nil {
			t.Fatalf("%+v: no error", c)
		}
		factsonly.Check(t, err.Error())
	}
	for _, err := range []error{ErrUnrecognised, ErrNoCmdline, ErrFull, ErrEmptyFile, ErrNotFAT} {
		factsonly.Check(t, err.Error())
	}
}

// TestApplyLongFiles: an image's config.txt and cmdline.txt longer than
// a sector (Raspberry Pi OS's config.txt is 1.2 KB) are read whole and
// nothing more: read in pieces, go-diskfs returned the rest of their last
// cluster with them, and the customised files carried kilobytes of zeros.
func TestApplyLongFiles(t *testing.T) {
	config := strings.Repeat("# a comment line of the image's config.txt, as long as it is\n", 24) + "#dtparam=i2c_arm=on\n"
	cmdline := "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait quiet" +
		strings.Repeat(" opt=value", 60) + " init=/usr/lib/raspberrypi-sys-mods/firstboot\n"
	for _, spec := range []fatSpec{{fat: "16", kib: 32768, cluster: 4}, {fat: "32", kib: 130 << 10, cluster: 2}} {
		spec.files = map[string]string{"config.txt": config, "cmdline.txt": cmdline, "issue.txt": "Raspberry Pi reference\n"}
		disk := makeDisk(t, spec)
		c := Config{Hostname: "kiosk", ConfigTxt: []string{"dtparam=i2c_arm=on", "enable_uart=1"}}
		if _, err := Apply(disk, 512, c, Options{Now: fixedNow}); err != nil {
			t.Fatal(err)
		}
		got := checkFS(t, disk, "config.txt", "cmdline.txt")
		if want := strings.Replace(config, "#dtparam", "dtparam", 1) + "enable_uart=1\n"; got["config.txt"] != want {
			t.Errorf("FAT%s: config.txt is %d bytes, want %d", spec.fat, len(got["config.txt"]), len(want))
		}
		if want := strings.TrimSpace(cmdline) + systemdRun; got["cmdline.txt"] != want {
			t.Errorf("FAT%s: cmdline.txt is %d bytes, want %d", spec.fat, len(got["cmdline.txt"]), len(want))
		}
	}
}
