package customize

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// hostile are values a hostile user, file or device gives: shell command
// substitutions, quotes, line breaks, a command separator, YAML's flow
// syntax, its mapping and comment marks, control characters (an escape
// sequence, a NUL), a name longer than any rule takes.
var hostile = []string{
	"$(touch /tmp/PWNED)",
	"`touch /tmp/PWNED`",
	"it's'; touch /tmp/PWNED; '",
	`say "hi" "$(touch /tmp/PWNED)"`,
	"kiosk\nbootcmd: [[touch, /tmp/PWNED]]",
	"kiosk; touch /tmp/PWNED",
	"{a: b}",
	"[x]",
	"key: value",
	"#comment",
	"a\x1b]0;PWNED\x07b",
	"a\x00b",
	"a\rb",
	strings.Repeat("a", 70),
}

// TestValuesRefused: every value whose standard has a rule is held to it
// before anything is written, as a usage error naming the value (quoted,
// control characters escaped) and the rule, about the setting that gave
// it; the values of the standards' own examples pass.
func TestValuesRefused(t *testing.T) {
	fields := []struct {
		name    string
		setting failure.Setting
		rule    string
		set     func(c *Config, v string)
		good    []string
		bad     []string // besides hostile
	}{
		{"hostname", SettingHostname, ruleHostname, func(c *Config, v string) { c.Hostname = v },
			[]string{"kiosk", "pi-{n}", "pi-{usb_serial}", "Station-07", "1", strings.Repeat("a", 63)},
			[]string{"-pi", "pi-", "pi.local", "pi_1", "pi {n}", "ké", strings.Repeat("a", 64), "{n}-" + strings.Repeat("a", 62)}},
		{"user", SettingUser, ruleUser, func(c *Config, v string) { c.User = v },
			[]string{"maker", "_ops", "a-b_c1", strings.Repeat("a", 32)},
			[]string{"Maker", "1st", "-x", "a.b", "a$", "a b", strings.Repeat("a", 33), "{n}x"}},
		{"wifi.country", SettingWiFiCountry, ruleCountry, func(c *Config, v string) { c.WiFi.Country = v },
			[]string{"GB", "de", "US"},
			[]string{"UK", "XX", "G", "GBR", "00"}},
		{"timezone", SettingTimezone, ruleTimezone, func(c *Config, v string) { c.Timezone = v },
			[]string{"Europe/London", "UTC", "America/Argentina/Buenos_Aires", "Etc/GMT+5"},
			[]string{"Local", "Europe/Nowhere", "../../etc/passwd", "/etc/localtime", "Europe//London", "europe/london "}},
		{"keymap", SettingKeymap, ruleKeymap, func(c *Config, v string) { c.Keymap = v },
			[]string{"gb", "us", "de", "latam"},
			[]string{"GB", "xx", "gb,us", "custom"}},
		{"locale", SettingFile, ruleLocale, func(c *Config, v string) { c.Locale = v },
			[]string{"en_GB.UTF-8", "de_DE", "C", "C.UTF-8", "POSIX", "sr_RS@latin", "ca_ES.UTF-8@valencia"},
			[]string{"en_XX.UTF-8", "english", "en_GB.UTF-8 ", "EN_gb"}},
		{"config_txt", SettingFile, ruleLine, func(c *Config, v string) { c.ConfigTxt = []string{v} },
			[]string{"dtparam=i2c_arm=on", "$(not code here)"},
			nil},
	}
	for _, f := range fields {
		t.Run(f.name, func(t *testing.T) {
			for _, v := range f.good {
				var c Config
				f.set(&c, v)
				if err := c.Check(); err != nil {
					t.Errorf("%q: %v", v, err)
				}
			}
			bad := f.bad
			if f.name != "config_txt" {
				bad = append(bad, hostile...)
			} else {
				bad = []string{"a\nb", "a\x1b[31m", "a\rb", "a\x00b"}
			}
			for _, v := range bad {
				var c Config
				f.set(&c, v)
				err := c.Check()
				if err == nil {
					t.Errorf("%q: taken", v)
					continue
				}
				if failure.Of(err) != failure.Usage || failure.SettingOf(err) != f.setting {
					t.Errorf("%q: class %v, setting %q; want usage, %q", v, failure.Of(err), failure.SettingOf(err), f.setting)
				}
				msg := err.Error()
				if !strings.Contains(msg, quote(v)) || !strings.Contains(msg, f.rule) {
					t.Errorf("%q: %q names not the value and the rule", v, msg)
				}
				if strings.ContainsAny(msg, "\n\r\x1b\x00") {
					t.Errorf("%q: the message carries a control character: %q", v, msg)
				}
				factsonly.Check(t, msg)
			}
		})
	}
}

// TestDataValuesChecked: values that are data wherever they go (an SSID,
// a password, an SSH key's comment) may hold what the files' languages
// would read as code, which their encoders keep data (TestGeneratedHostile);
// what no file can hold (a line break, a control character) and what
// their standards refuse is refused, secrets without being shown.
func TestDataValuesChecked(t *testing.T) {
	tests := []struct {
		name    string
		c       Config
		setting failure.Setting
		secret  string // a value no message may show
	}{
		{"ssid line break", Config{WiFi: WiFi{SSID: "net\nbootcmd: x"}}, SettingWiFiSSID, ""},
		{"ssid escape", Config{WiFi: WiFi{SSID: "net\x1b[2J"}}, SettingWiFiSSID, ""},
		{"ssid 33 bytes", Config{WiFi: WiFi{SSID: strings.Repeat("s", 33)}}, SettingWiFiSSID, ""},
		{"ssid not UTF-8", Config{WiFi: WiFi{SSID: "caf\xe9"}}, SettingWiFiSSID, ""},
		{"passphrase line break", Config{WiFi: WiFi{SSID: "n", Password: "secret\npassphrase"}}, SettingFile, "secret\npassphrase"},
		{"passphrase 7", Config{WiFi: WiFi{SSID: "n", Password: "1234567"}}, SettingFile, "1234567"},
		{"passphrase 64 not hex", Config{WiFi: WiFi{SSID: "n", Password: strings.Repeat("xy", 32)}}, SettingFile, strings.Repeat("xy", 32)},
		{"passphrase not ASCII", Config{WiFi: WiFi{SSID: "n", Password: "pässwörter"}}, SettingFile, "pässwörter"},
		{"password line break", Config{Password: "hunter2\nroot::0:0::/:/bin/sh"}, SettingFile, "hunter2"},
		{"hash not crypt", Config{PasswordHash: "plain"}, SettingFile, "plain"},
		{"hash with a quote", Config{PasswordHash: "$6$salt$ab'c"}, SettingFile, "ab'c"},
		{"hash with a line", Config{PasswordHash: "$6$salt$abc\nuser:x"}, SettingFile, "abc"},
		{"key with options", Config{SSHKeys: []string{`command="touch /tmp/PWNED" ` + keyEd25519}}, SettingSSHKey, ""},
		{"key comment line break", Config{SSHKeys: []string{keyEd25519 + " me\nbootcmd: x"}}, SettingSSHKey, ""},
		{"key comment escape", Config{SSHKeys: []string{keyEd25519 + " me\x1b[2J"}}, SettingSSHKey, ""},
		{"two keys", Config{SSHKeys: []string{keyEd25519 + "\n" + keyECDSA}}, SettingSSHKey, ""},
		{"key unknown type", Config{SSHKeys: []string{"ssh-foo AAAAC3NzaC1lZDI1NTE5AAAAIHq8MG"}}, SettingSSHKey, ""},
		{"key DSA", Config{SSHKeys: []string{"ssh-dss AAAAB3NzaC1kc3MAAACBAP"}}, SettingSSHKey, ""},
		{"key body not base64", Config{SSHKeys: []string{"ssh-ed25519 $(touch/tmp/PWNED)"}}, SettingSSHKey, ""},
		{"key body of another type", Config{SSHKeys: []string{"ssh-rsa " + strings.Fields(keyEd25519)[1]}}, SettingSSHKey, ""},
		{"key cut short", Config{SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB maker@host"}}, SettingSSHKey, ""},
		{"file name control", Config{Files: map[string]string{"a\nb": "/dev/null"}}, SettingFile, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Check()
			if err == nil {
				t.Fatal("taken")
			}
			if failure.Of(err) != failure.Usage || failure.SettingOf(err) != tc.setting {
				t.Errorf("%v: class %v, setting %q; want usage, %q", err, failure.Of(err), failure.SettingOf(err), tc.setting)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the message shows the secret: %v", err)
			}
			if strings.ContainsAny(err.Error(), "\n\r\x1b") {
				t.Errorf("the message carries a control character: %q", err)
			}
			factsonly.Check(t, err.Error())
		})
	}
	// Code in data is data: taken here, kept data by the encoders.
	for _, c := range []Config{
		{WiFi: WiFi{SSID: "$(touch /tmp/PWNED)", Password: `'"$(touch /tmp/PWNED)"'`}},
		{WiFi: WiFi{SSID: "{a: b} #x"}}, {WiFi: WiFi{SSID: "[x]: '\""}},
		{Password: `'; touch /tmp/PWNED; "$(x)"`},
		{SSHKeys: []string{keyEd25519 + " $(touch /tmp/PWNED) 'x' \"y\" {a: b} #c"}},
		{PasswordHash: "$6$rounds=5000$salt$hash./09AZaz"}, {PasswordHash: "$y$j9T$abc$def"},
	} {
		if err := c.Check(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestDeviceSerials: the serials a reader or a card reports are hostile:
// in a template they become letters, digits and hyphens, so every one of
// hostile gives a host name that is one, and a serial too long for the
// rule refuses that card (Refused, before its first byte) rather than
// being cut.
func TestDeviceSerials(t *testing.T) {
	c := Config{Hostname: "pi-{usb_serial}", User: "u{card_serial}", Password: "p-{usb_serial}", ConfigTxt: []string{"# card {card_serial}"}}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	for _, serial := range hostile {
		v := Vars{N: 3, USBSerial: serial, CardSerial: strings.ToLower(serial)}
		e, err := c.For(v)
		if len(serial) == 70 {
			var de *DeviceValueError
			if !errors.As(err, &de) || failure.Of(err) != failure.Refused || failure.SettingOf(err) != SettingHostname {
				t.Errorf("a %d-character serial: %v (class %v), want a refusal about the host name", len(serial), err, failure.Of(err))
			}
			factsonly.Check(t, err.Error())
			continue
		}
		if err != nil {
			t.Errorf("serial %q: %v", serial, err)
			continue
		}
		for _, value := range []string{e.Hostname, e.User, e.Password, e.ConfigTxt[0]} {
			if strings.ContainsAny(value, "$`'\"\n\r;{}[]:#\x1b\x00 ") && value != e.ConfigTxt[0] {
				t.Errorf("serial %q gave %q", serial, value)
			}
		}
		if !hostnameRE.MatchString(e.Hostname) || strings.ContainsAny(e.ConfigTxt[0], "\n\r\x1b\x00$`") {
			t.Errorf("serial %q gave host name %q, config.txt line %q", serial, e.Hostname, e.ConfigTxt[0])
		}
	}
	for serial, want := range map[string]string{"": "pi-unknown", "  AA00000000000489 ": "pi-AA00000000000489", "058F_6366.6485": "pi-058F-6366-6485", "___": "pi-unknown"} {
		if e, err := c.For(Vars{USBSerial: serial, CardSerial: "x"}); err != nil || e.Hostname != want {
			t.Errorf("serial %q: %q, %v; want %q", serial, e.Hostname, err, want)
		}
	}
	// A user name takes no capital: a card serial that has some refuses
	// the card, as the device's doing.
	if _, err := c.For(Vars{CardSerial: "ABC"}); failure.Of(err) != failure.Refused || failure.SettingOf(err) != SettingUser {
		t.Errorf("card serial ABC in a user name: %v", err)
	}
	// A card number that makes the name too long is the template's doing:
	// a usage error.
	long := Config{Hostname: strings.Repeat("a", 62) + "{n}"}
	if err := long.Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := long.For(Vars{N: 10}); failure.Of(err) != failure.Usage || failure.SettingOf(err) != SettingHostname {
		t.Errorf("card 10: %v", err)
	}
}

// TestOwnCloudInitFiles: a user's own user-data or network-config that
// cloud-init would not take is refused before anything is written, never
// written and read back "the same".
func TestOwnCloudInitFiles(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, userData, networkConfig string
		ok                            bool
	}{
		{"cloud-config", "#cloud-config\nhostname: kiosk\n", "network:\n  version: 2\n", true},
		{"script", "#!/bin/sh\necho hi\n", "", true},
		{"empty cloud-config", "#cloud-config\n", "", true},
		{"not YAML", "#cloud-config\nhostname: [kiosk\n", "", false},
		{"tab indent", "#cloud-config\nusers:\n\t- name: x\n", "", false},
		{"a list", "#cloud-config\n- hostname\n", "", false},
		{"no header", "hostname: kiosk\n", "", false},
		{"network not YAML", "", "network: {version: 2\n", false},
		{"network a scalar", "", "version 2\n", false},
	}
	for _, tc := range tests {
		var c Config
		if tc.userData != "" {
			c.UserData = filepath.Join(dir, tc.name+".user-data")
			if err := os.WriteFile(c.UserData, []byte(tc.userData), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if tc.networkConfig != "" {
			c.NetworkConfig = filepath.Join(dir, tc.name+".network-config")
			if err := os.WriteFile(c.NetworkConfig, []byte(tc.networkConfig), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := c.Check()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Check = %v", tc.name, err)
		}
		if err != nil {
			if failure.SettingOf(err) != SettingFile || !strings.Contains(err.Error(), dir) {
				t.Errorf("%s: %v does not name the file", tc.name, err)
			}
			factsonly.Check(t, err.Error())
		}
	}
}

// TestLoadChecksValues: a file's values are checked as the file's: the
// error names the file and the key (not a flag that gives the same
// setting), and shows the value and the rule.
func TestLoadChecksValues(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"host.toml":    "hostname = \"pi; reboot\"\n",
		"user.yaml":    "user: \"Maker\"\n",
		"tz.toml":      "timezone = \"Mars/Olympus\"\n",
		"key.toml":     "ssh_keys = [\"ssh-ed25519 AAAA me\"]\n",
		"country.yml":  "wifi:\n  ssid: net\n  country: UK\n",
		"format.toml":  "init_format = \"netplan\"\n",
		"locale.yaml":  "locale: \"en_GB.UTF-8\\nbootcmd: x\"\n",
		"keymap.toml":  "keymap = \"gb'\"\n",
		"config.toml":  "config_txt = [\"a\\nb\"]\n",
		"ssid.toml":    "[wifi]\nssid = \"a\\u001b[2Jb\"\n",
		"psk.toml":     "[wifi]\nssid = \"n\"\npassword = \"short\"\n",
		"hidden.toml":  "[wifi]\nhidden = true\n",
		"ud.yaml":      "user_data: missing.yaml\n",
		"sshkeys.yaml": "ssh_keys: [\"command=\\\"x\\\" " + keyEd25519 + "\"]\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil || failure.SettingOf(err) != SettingFile || failure.Of(err) != failure.Usage || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want a usage error about the file naming it", name, err)
			continue
		}
		if strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%s: %q carries a control character", name, err)
		}
		factsonly.Check(t, err.Error())
	}
}

// TestLoadShowsNoSecret: a settings file its parser refuses is named with
// the line and key, never with a secret's text, which the parsers quote in
// their messages (a password left unquoted in TOML, a passphrase under a
// key of another type in YAML).
func TestLoadShowsNoSecret(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		secret     string // the text no message may show
		want       string // what the message must still say
	}{
		{"bare.toml", "user = \"maker\"\npassword = hunter2hunter2\n", "hunter2hunter2", "line 2"},
		{"spaces.toml", "password = correct horse\n", "correct", "line 1"},
		{"psk.toml", "[wifi]\nssid = \"n\"\npassword = s3cretpass 2\n", "s3cretpass", "line 3"},
		{"hash.toml", "password_hash = $6$salt$hash\n", "salt", "line 1"},
		{"dollar.toml", "password = $(reboot)pass\n", "reboot", "line 1"},
		{"wrongkey.yaml", "password: x\nssh: hunter2hunter2\n", "hunter2hunter2", "line 2"},
		{"wifi.yaml", "wifi: s3cretpass\n", "s3cretpass", "line 1"},
		{"flow.yaml", "wifi: {ssid: n, hidden: s3cretpass}\n", "s3cretpass", "line 1"},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil || failure.SettingOf(err) != SettingFile || failure.Of(err) != failure.Usage {
			t.Errorf("%s: %v, want a usage error about the file", tc.name, err)
			continue
		}
		if strings.Contains(err.Error(), tc.secret) {
			t.Errorf("%s: the message shows the secret: %v", tc.name, err)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want the file and %q named", tc.name, err, tc.want)
		}
	}
}
