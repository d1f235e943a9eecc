package customize

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
			s, err := resolve(&tc.c, fixedSalt())
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".firstrun.sh", s.firstRun())
			golden(t, tc.name+".user-data", s.userData())
			golden(t, tc.name+".network-config", s.networkConfig())
			golden(t, tc.name+".rpi-preseed.toml", s.preseed())
			if ud := s.userData(); ud != nil {
				checkCloudConfig(t, append([]byte("#cloud-config\n"), ud...))
			}
			if nc := s.networkConfig(); nc != nil {
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
			if path, err := exec.LookPath("shellcheck"); err == nil {
				script := filepath.Join(t.TempDir(), "firstrun.sh")
				if err := os.WriteFile(script, s.firstRun(), 0o755); err != nil {
					t.Fatal(err)
				}
				// Errors only: the script is Raspberry Pi Imager's, its
				// style (cat | tr, an unquoted glob variable) kept.
				if out, err := exec.Command(path, "-s", "sh", "-S", "error", script).CombinedOutput(); err != nil {
					t.Errorf("shellcheck: %v\n%s", err, out)
				}
			} else {
				t.Fatal("shellcheck is not installed (.ci/run installs it)")
			}
		})
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
