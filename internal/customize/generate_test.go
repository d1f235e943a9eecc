package customize

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixedSalt gives the same salt every run, so the texts are golden.
func fixedSalt() *bytes.Reader { return bytes.NewReader([]byte("0123456789abcdef")) }

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from its golden file (go test -update writes it):\n%s", name, got)
	}
}

func TestGenerated(t *testing.T) {
	tests := []struct {
		name string
		c    Config
	}{
		{"full", testConfig().Expand(Vars{N: 7})},
		{"open-hidden", Config{Hostname: "kiosk", SSH: true, WiFi: WiFi{SSID: `Caf"e\net`, Hidden: true, Country: "de"}, Locale: "de_DE.UTF-8"}},
		{"hash-only", Config{User: "ops", PasswordHash: "$y$j9T$abc$def", Timezone: "UTC", WiFi: WiFi{Country: "US"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.c.Check(); err != nil {
				t.Fatal(err)
			}
			s, err := resolve(&tc.c, fixedSalt())
			if err != nil {
				t.Fatal(err)
			}
			ud, nc, ps := generated(t, &s)
			golden(t, tc.name+".firstrun.sh", s.firstRun())
			golden(t, tc.name+".user-data", ud)
			golden(t, tc.name+".network-config", nc)
			golden(t, tc.name+".rpi-preseed.toml", ps)
			if ud != nil {
				checkCloudConfig(t, append([]byte("#cloud-config\n"), ud...))
			}
			if nc != nil {
				var doc struct {
					Network struct {
						Version int
						Wifis   map[string]struct {
							AccessPoints map[string]map[string]any `yaml:"access-points"`
						}
					}
				}
				if err := yaml.Unmarshal(nc, &doc); err != nil || doc.Network.Version != 2 {
					t.Fatalf("network-config is not netplan version 2 YAML: %v\n%s", err, nc)
				}
				if _, ok := doc.Network.Wifis["wlan0"].AccessPoints[tc.c.WiFi.SSID]; !ok {
					t.Errorf("network-config names no access point %q: %+v", tc.c.WiFi.SSID, doc)
				}
			}
			shellcheck(t, s.firstRun())
		})
	}
}

// generated is s's cloud-init and rpi-preseed files (each nil when
// nothing is asked of it).
func generated(t *testing.T, s *settings) (userData, networkConfig, preseed []byte) {
	t.Helper()
	var err error
	if userData, err = s.userData(); err != nil {
		t.Fatal(err)
	}
	if networkConfig, err = s.networkConfig(); err != nil {
		t.Fatal(err)
	}
	if preseed, err = s.preseed(); err != nil {
		t.Fatal(err)
	}
	return userData, networkConfig, preseed
}

// shellcheck checks a generated script with shellcheck, every severity
// but SC2016 ("expressions don't expand in single quotes"): a value's $ in
// single quotes is meant literally, which is the point.
func shellcheck(t *testing.T, script []byte) {
	t.Helper()
	path, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Fatal("shellcheck is not installed (.ci/run installs it)")
	}
	f := filepath.Join(t.TempDir(), "firstrun.sh")
	if err := os.WriteFile(f, script, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(path, "-s", "sh", "-e", "SC2016", f).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s\n%s", err, out, script)
	}
}

// checkCloudConfig validates user-data with Debian's cloud-init (cloud-init
// schema: its JSON schema of every module's keys).
func checkCloudConfig(t *testing.T, userData []byte) {
	t.Helper()
	path, err := exec.LookPath("cloud-init")
	if err != nil {
		t.Fatal("cloud-init is not installed (.ci/run installs it)")
	}
	f := filepath.Join(t.TempDir(), "user-data")
	if err := os.WriteFile(f, userData, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "schema", "--config-file", f).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Valid cloud-config") {
		t.Errorf("cloud-init schema: %v\n%s\n%s", err, out, userData)
	}
}

// TestCryptPassword checks the hash against OpenSSL's SHA-512-crypt and
// the Wi-Fi key against IEEE 802.11i's test vectors.
func TestCryptPassword(t *testing.T) {
	for _, pw := range []string{"s3cret", "pass word with spaces", "ünïcödé"} {
		got, err := CryptPassword(pw, fixedSalt())
		if err != nil {
			t.Fatal(err)
		}
		salt := strings.Split(got, "$")[2]
		out, err := exec.Command("openssl", "passwd", "-6", "-salt", salt, pw).Output()
		if err != nil {
			t.Fatalf("openssl passwd: %v", err)
		}
		if want := strings.TrimSpace(string(out)); got != want {
			t.Errorf("CryptPassword(%q) = %s, openssl says %s", pw, got, want)
		}
	}
	a, _ := CryptPassword("x", nil)
	b, _ := CryptPassword("x", nil)
	if a == b {
		t.Error("two hashes with the same salt: the salt is not random")
	}
	for _, v := range []struct{ pass, ssid, want string }{
		{"password", "IEEE", "f42c6fc52df0ebef9ebb4b90b38a5f902e83fe1b135a70e23aed762e9710a12e"},
		{"ThisIsAPassword", "ThisIsASSID", "0dc0d6eb90555ed6419756b9a15ec3e3209b63df707dd508d14581f8982721af"},
		{strings.Repeat("ab", 32), "any", strings.Repeat("ab", 32)}, // a key is kept
	} {
		if got := WiFiKey(v.pass, v.ssid); got != v.want {
			t.Errorf("WiFiKey(%q, %q) = %s, want %s", v.pass, v.ssid, got, v.want)
		}
	}
}

func TestEditConfigTxt(t *testing.T) {
	tests := []struct{ in, want string }{
		{"#dtparam=i2c_arm=on\n", "dtparam=i2c_arm=on\nenable_uart=1\n"},
		{"dtparam=i2c_arm=on\nenable_uart=1\n", "dtparam=i2c_arm=on\nenable_uart=1\n"},
		{"x=1", "x=1\ndtparam=i2c_arm=on\nenable_uart=1\n"},
		{"", "dtparam=i2c_arm=on\nenable_uart=1\n"},
	}
	for _, tc := range tests {
		if got := string(editConfigTxt([]byte(tc.in), []string{"dtparam=i2c_arm=on", "enable_uart=1"})); got != tc.want {
			t.Errorf("editConfigTxt(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestGeneratedHostile: values that are data wherever they go (an SSID, a
// Wi-Fi password, a password, an SSH key's comment) and carry what each
// language would read as code stay data in every file: firstrun.sh passes
// shellcheck with every value in single quotes (codeOutsideQuotes),
// user-data passes cloud-init's schema, and each file decodes to the
// values given.
func TestGeneratedHostile(t *testing.T) {
	for _, v := range hostile {
		if strings.IndexFunc(v, unicode.IsControl) >= 0 {
			continue // refused: TestDataValuesChecked
		}
		t.Run(v[:min(len(v), 20)], func(t *testing.T) {
			t.Parallel()
			ssid := ("x" + v)[:min(len(v)+1, 32)]
			psk := (v + "........")[:min(len(v)+8, 63)]
			c := Config{Hostname: "kiosk", User: "maker", Password: v, SSH: true, SSHKeys: []string{keyEd25519 + " " + v},
				WiFi: WiFi{SSID: ssid, Password: psk, Country: "GB"}, Locale: "en_GB.UTF-8", Keymap: "gb", Timezone: "Europe/London"}
			if err := c.Check(); err != nil {
				t.Fatal(err)
			}
			s, err := resolve(&c, fixedSalt())
			if err != nil {
				t.Fatal(err)
			}
			script := s.firstRun()
			shellcheck(t, script)
			if bad := codeOutsideQuotes(string(script), "PWNED"); len(bad) > 0 {
				t.Errorf("firstrun.sh has the value outside single quotes: %q", bad)
			}
			for _, word := range []string{shellQuote(ssid), shellQuote(s.keys[0])} {
				if !strings.Contains(string(script), word) {
					t.Errorf("firstrun.sh does not pass %s as one word", word)
				}
			}
			ud, nc, ps := generated(t, &s)
			checkCloudConfig(t, append([]byte("#cloud-config\n"), ud...))
			var user cloudConfig
			if err := yaml.Unmarshal(ud, &user); err != nil || user.User == nil || len(user.User.SSHAuthorizedKeys) != 1 ||
				user.User.SSHAuthorizedKeys[0] != keyEd25519+" "+v || user.Hostname != "kiosk" {
				t.Errorf("user-data reads back as %+v, %v", user, err)
			}
			var net netplan
			if err := yaml.Unmarshal(nc, &net); err != nil || net.Network.WiFis["wlan0"].AccessPoints[ssid].Password != s.psk {
				t.Errorf("network-config reads back as %+v, %v", net, err)
			}
			var pre preseedFile
			if _, err := toml.Decode(string(ps), &pre); err != nil || pre.WLAN == nil || pre.WLAN.SSID != ssid ||
				pre.SSH == nil || pre.SSH.AuthorizedKeys[0] != keyEd25519+" "+v {
				t.Errorf("rpi-preseed.toml reads back as %+v, %v", pre, err)
			}
		})
	}
}

// TestGeneratorsQuoteEverything: each file's own quoting holds every
// value, also one no check let through (the generators given hostile
// values directly): in firstrun.sh each is in single quotes and the script
// passes shellcheck; user-data passes cloud-init's schema and, as every
// YAML and TOML file, decodes to what was meant (the encoders check it).
func TestGeneratorsQuoteEverything(t *testing.T) {
	for _, v := range hostile {
		if strings.ContainsAny(v, "\x00") {
			continue // no text file holds a NUL
		}
		t.Run(v[:min(len(v), 20)], func(t *testing.T) {
			t.Parallel()
			s := settings{hostname: v, user: v, passHash: v, sshEnabled: true, keys: []string{v}, ssid: v, psk: v, country: v,
				keymap: v, timezone: v, locale: v}
			script := s.firstRun()
			if bad := codeOutsideQuotes(string(script), "PWNED"); len(bad) > 0 {
				t.Errorf("outside single quotes in %q", bad)
			}
			shellcheck(t, script)
			ud, _, _ := generated(t, &s)
			checkCloudConfig(t, append([]byte("#cloud-config\n"), ud...))
		})
	}
}

// codeOutsideQuotes is the lines of a sh script where marker stands
// outside single quotes and outside a quoted here-document's body: where
// the shell would read it as code, or expand what is in it.
func codeOutsideQuotes(script, marker string) []string {
	var bad []string
	state := byte(0) // 0: code, '\'': single quotes, '"': double quotes
	heredoc, pending := "", ""
	lines := strings.Split(script, "\n")
	for _, line := range lines {
		if heredoc != "" {
			if line == heredoc {
				heredoc = ""
			}
			continue // a quoted here-document's body is data
		}
		for i := 0; i < len(line); i++ {
			c := line[i]
			if state != '\'' && strings.HasPrefix(line[i:], marker) {
				bad = append(bad, line)
				break
			}
			switch {
			case state == '\'':
				if c == '\'' {
					state = 0
				}
			case state == '"':
				switch c {
				case '"':
					state = 0
				case '\\':
					i++
				}
			case c == '\'' || c == '"':
				state = c
			case c == '\\':
				i++
			case c == '#' && (i == 0 || line[i-1] == ' '):
				i = len(line) // a comment
			case strings.HasPrefix(line[i:], "<<'"):
				end := strings.IndexByte(line[i+3:], '\'')
				if end < 0 {
					return append(bad, line)
				}
				pending = line[i+3 : i+3+end]
				i += 3 + end
			case strings.HasPrefix(line[i:], "<<"):
				return append(bad, line) // an unquoted here-document expands its body
			}
		}
		if pending != "" && state == 0 {
			heredoc, pending = pending, ""
		}
	}
	return bad
}
