package customize

import (
	"cmp"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/GehirnInc/crypt/sha512_crypt"
	"go.yaml.in/yaml/v3"
)

// The files below say what Raspberry Pi Imager's generators
// (src/customization_generator.cpp) say, so that an image's first-boot
// tools (raspberrypi-sys-mods' imager_custom, userconf-pi, cloud-init,
// rpi-preseed) read what they were made to read; every value in them is
// checked (validate.go) and written through its language's encoder
// (encode.go), never pasted into the text.

// settings are a Config's values resolved for the generators: the
// password as a crypt hash, the Wi-Fi key derived, the SSH choices made.
type settings struct {
	hostname, user, passHash    string
	sshEnabled, sshPasswordAuth bool
	keys                        []string
	ssid, psk, country          string
	hidden                      bool
	keymap, timezone, locale    string
}

// resolve derives the generators' settings from c; rnd gives the crypt
// salt.
func resolve(c *Config, rnd io.Reader) (settings, error) {
	s := settings{
		hostname: strings.TrimSpace(c.Hostname), user: strings.TrimSpace(c.User),
		ssid: c.WiFi.SSID, country: strings.ToUpper(strings.TrimSpace(c.WiFi.Country)), hidden: c.WiFi.Hidden,
		keymap: strings.TrimSpace(c.Keymap), timezone: strings.TrimSpace(c.Timezone), locale: strings.TrimSpace(c.Locale),
	}
	for _, k := range c.SSHKeys {
		if k = strings.TrimSpace(k); k != "" {
			s.keys = append(s.keys, k)
		}
	}
	s.sshEnabled = c.SSH || len(s.keys) > 0
	s.sshPasswordAuth = c.SSH && len(s.keys) == 0
	if c.SSHPasswordAuth != nil {
		s.sshPasswordAuth = s.sshEnabled && *c.SSHPasswordAuth
	}
	s.passHash = c.PasswordHash
	if c.Password != "" {
		h, err := CryptPassword(c.Password, rnd)
		if err != nil {
			return settings{}, err
		}
		s.passHash = h
	}
	if s.ssid != "" {
		s.psk = WiFiKey(c.WiFi.Password, s.ssid)
	}
	return s, nil
}

// saltChars are crypt(3)'s salt alphabet.
const saltChars = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// CryptPassword hashes a password as SHA-512-crypt ("$6$", 5000 rounds,
// a 16-character salt from rnd; crypto/rand when nil): what glibc's and
// libxcrypt's crypt(3) check on every Debian, Raspberry Pi OS and Ubuntu
// release. (Raspberry Pi Imager uses yescrypt for images from 2023, which
// no Go library here implements; libxcrypt accepts both.)
func CryptPassword(password string, rnd io.Reader) (string, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	b := make([]byte, 16)
	if _, err := io.ReadFull(rnd, b); err != nil {
		return "", fmt.Errorf("a salt for the password: %w", err)
	}
	for i := range b {
		b[i] = saltChars[int(b[i])%len(saltChars)]
	}
	return sha512_crypt.New().Generate([]byte(password), []byte("$6$"+string(b)))
}

// WiFiKey is the WPA key a network's password stands for: a passphrase
// of 8 to 63 characters becomes PBKDF2-SHA1(passphrase, SSID, 4096, 32)
// in hex, as wpa_passphrase computes it; anything else (a 64-digit key)
// is kept.
func WiFiKey(password, ssid string) string {
	password = strings.NewReplacer("\r", "", "\n", "").Replace(password)
	if n := len([]rune(password)); n < 8 || n >= 64 {
		return password
	}
	key, err := pbkdf2.Key(sha1.New, password, []byte(ssid), 4096, 32)
	if err != nil { // only for lengths FIPS mode refuses; 32 bytes are not one
		return password
	}
	return hex.EncodeToString(key)
}

// firstRun is the systemd format's firstrun.sh: run once by systemd.run
// from the kernel command line, it applies the settings with
// raspberrypi-sys-mods' imager_custom (or by hand where the image lacks
// it), then removes itself and its command-line entry. Every value is in
// single quotes (shellQuote), also where the script writes it into a file
// that is itself a shell fragment (/etc/default/keyboard); the values that
// go into sed expressions are ones whose rule leaves sed nothing to read in
// them (a host name, a user name).
func (s *settings) firstRun() []byte {
	var b strings.Builder
	line := func(l ...string) {
		for _, x := range l {
			b.WriteString(x)
			b.WriteByte('\n')
		}
	}
	const custom = "/usr/lib/raspberrypi-sys-mods/imager_custom"
	line("#!/bin/sh", "", "set +e", "")
	if s.hostname != "" {
		line(`CURRENT_HOSTNAME=$(tr -d " \t\n\r" </etc/hostname)`,
			"NEW_HOSTNAME="+shellQuote(s.hostname),
			"if [ -f "+custom+" ]; then",
			"   "+custom+` set_hostname "$NEW_HOSTNAME"`,
			"else",
			`   echo "$NEW_HOSTNAME" >/etc/hostname`,
			`   sed -i "s/127.0.1.1.*$CURRENT_HOSTNAME/127.0.1.1\t$NEW_HOSTNAME/g" /etc/hosts`,
			"fi")
	}
	if s.user != "" || s.passHash != "" || len(s.keys) > 0 {
		line("FIRSTUSER=$(getent passwd 1000 | cut -d: -f1)")
	}
	if len(s.keys) > 0 {
		line("FIRSTUSERHOME=$(getent passwd 1000 | cut -d: -f6)")
		var args strings.Builder
		for _, k := range s.keys {
			args.WriteString(" " + shellQuote(k))
		}
		// The keys in a quoted here-document are data: each is one line
		// (ParseKey), none the terminator.
		line("if [ -f "+custom+" ]; then",
			"   "+custom+" enable_ssh -k"+args.String(),
			"else",
			`   install -o "$FIRSTUSER" -m 700 -d "$FIRSTUSERHOME/.ssh"`,
			`cat > "$FIRSTUSERHOME/.ssh/authorized_keys" <<'EOF'`,
			strings.Join(s.keys, "\n"),
			"EOF",
			`   chown "$FIRSTUSER:$FIRSTUSER" "$FIRSTUSERHOME/.ssh/authorized_keys"`,
			`   chmod 600 "$FIRSTUSERHOME/.ssh/authorized_keys"`,
			"   echo 'PasswordAuthentication no' >>/etc/ssh/sshd_config",
			"   systemctl enable ssh",
			"fi")
	}
	if s.sshEnabled && s.sshPasswordAuth && len(s.keys) == 0 {
		line("if [ -f "+custom+" ]; then", "   "+custom+" enable_ssh", "else", "   systemctl enable ssh", "fi")
	}
	user := s.user
	if user == "" {
		user = "pi"
	}
	if s.user != "" || s.passHash != "" || len(s.keys) > 0 {
		line("NEW_USER="+shellQuote(user),
			"if [ -f /usr/lib/userconf-pi/userconf ]; then",
			`   /usr/lib/userconf-pi/userconf "$NEW_USER" `+shellQuote(s.passHash),
			"else")
		if s.passHash != "" {
			// The hash in single quotes: in double quotes the shell
			// would expand its $6$... fields away.
			line(`   printf '%s:%s\n' "$FIRSTUSER" ` + shellQuote(s.passHash) + " | chpasswd -e")
		}
		line(`   if [ "$FIRSTUSER" != "$NEW_USER" ]; then`,
			`      usermod -l "$NEW_USER" "$FIRSTUSER"`,
			`      usermod -m -d "/home/$NEW_USER" "$NEW_USER"`,
			`      groupmod -n "$NEW_USER" "$FIRSTUSER"`,
			`      if grep -q "^autologin-user=" /etc/lightdm/lightdm.conf ; then`,
			`         sed /etc/lightdm/lightdm.conf -i -e "s/^autologin-user=.*/autologin-user=$NEW_USER/"`,
			"      fi",
			"      if [ -f /etc/systemd/system/getty@tty1.service.d/autologin.conf ]; then",
			`         sed /etc/systemd/system/getty@tty1.service.d/autologin.conf -i -e "s/$FIRSTUSER/$NEW_USER/"`,
			"      fi",
			"      if [ -f /etc/sudoers.d/010_pi-nopasswd ]; then",
			`         sed -i "s/^$FIRSTUSER /$NEW_USER /" /etc/sudoers.d/010_pi-nopasswd`,
			"      fi",
			"   fi",
			"fi")
	}
	if s.ssid != "" {
		line("if [ -f " + custom + " ]; then")
		cmd := "   " + custom + " set_wlan "
		if s.hidden {
			cmd += "-h "
		}
		line(cmd + shellQuote(s.ssid) + " " + shellQuote(s.psk) + " " + shellQuote(s.country))
		line("else", "cat >/etc/wpa_supplicant/wpa_supplicant.conf <<'WPAEOF'")
		if s.country != "" {
			line("country=" + s.country)
		}
		line("ctrl_interface=DIR=/var/run/wpa_supplicant GROUP=netdev", "ap_scan=1", "", "update_config=1", "network={")
		if s.hidden {
			line("\tscan_ssid=1")
		}
		line(wpaSSID(s.ssid))
		if s.psk == "" {
			line("\tkey_mgmt=NONE")
		} else {
			line("\tkey_mgmt=WPA-PSK SAE", "\tpsk="+s.psk, "\tieee80211w=1")
		}
		line("}", "WPAEOF",
			"   chmod 600 /etc/wpa_supplicant/wpa_supplicant.conf",
			"   rfkill unblock wifi",
			"   for filename in /var/lib/systemd/rfkill/*:wlan ; do",
			`       echo 0 > "$filename"`,
			"   done",
			"fi")
	} else if s.country != "" {
		line("rfkill unblock wifi", "for filename in /var/lib/systemd/rfkill/*:wlan ; do", `  echo 0 > "$filename"`, "done")
	}
	if s.keymap != "" || s.timezone != "" {
		line("if [ -f " + custom + " ]; then")
		if s.keymap != "" {
			line("   " + custom + " set_keymap " + shellQuote(s.keymap))
		}
		if s.timezone != "" {
			line("   " + custom + " set_timezone " + shellQuote(s.timezone))
		}
		line("else")
		if s.timezone != "" {
			line("   rm -f /etc/localtime", "   echo "+shellQuote(s.timezone)+" >/etc/timezone", "   dpkg-reconfigure -f noninteractive tzdata")
		}
		if s.keymap != "" {
			line("cat >/etc/default/keyboard <<'KBEOF'", `XKBMODEL="pc105"`, "XKBLAYOUT="+shellQuote(s.keymap), `XKBVARIANT=""`, `XKBOPTIONS=""`, "", "KBEOF",
				"   dpkg-reconfigure -f noninteractive keyboard-configuration")
		}
		line("fi")
	}
	line("rm -f /boot/firstrun.sh", "sed -i 's| systemd.run.*||g' /boot/cmdline.txt", "exit 0")
	return []byte(b.String())
}

// wpaSSID is wpa_supplicant.conf's ssid line: quoted, or in hex when the
// SSID holds what a quoted one cannot (a quote, a backslash).
func wpaSSID(ssid string) string {
	if strings.ContainsAny(ssid, `"\`) || strings.IndexFunc(ssid, unicode.IsControl) >= 0 || !utf8.ValidString(ssid) {
		return "\tssid=hex:" + hex.EncodeToString([]byte(ssid))
	}
	return "\tssid=\"" + ssid + "\""
}

// cloudConfig is the user-data the cloud-init formats write, its keys in
// the order of Raspberry Pi Imager's.
type cloudConfig struct {
	ManageResolvConf bool          `yaml:"manage_resolv_conf"`
	Hostname         string        `yaml:"hostname,omitempty"`
	ManageEtcHosts   bool          `yaml:"manage_etc_hosts,omitempty"`
	Packages         []string      `yaml:"packages,omitempty"`
	Apt              *cloudApt     `yaml:"apt,omitempty"`
	Timezone         string        `yaml:"timezone,omitempty"`
	Locale           string        `yaml:"locale,omitempty"`
	Keyboard         *cloudKeymap  `yaml:"keyboard,omitempty"`
	User             *cloudUser    `yaml:"user,omitempty"`
	SSHPasswordAuth  *bool         `yaml:"ssh_pwauth,omitempty"`
	RunCmd           []cloudRunCmd `yaml:"runcmd,omitempty"`
}

type cloudApt struct {
	PreserveSourcesList bool   `yaml:"preserve_sources_list"`
	Conf                string `yaml:"conf"`
}

type cloudKeymap struct {
	Model  string `yaml:"model"`
	Layout string `yaml:"layout"`
}

type cloudUser struct {
	Name              string   `yaml:"name"`
	Shell             string   `yaml:"shell"`
	LockPasswd        bool     `yaml:"lock_passwd"`
	Passwd            string   `yaml:"passwd,omitempty"`
	SSHAuthorizedKeys []string `yaml:"ssh_authorized_keys,omitempty"`
	Sudo              *string  `yaml:"sudo"` // null: no sudo rule of cloud-init's
}

// cloudRunCmd is one runcmd entry, a command and its arguments (run
// without a shell), written on one line.
type cloudRunCmd []string

func (c cloudRunCmd) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, a := range c {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: a})
	}
	return n, nil
}

// userData is the cloud-init formats' user-data (without its
// "#cloud-config" line), nil when nothing is asked of it.
func (s *settings) userData() ([]byte, error) {
	var doc cloudConfig
	if s.hostname != "" {
		doc.Hostname, doc.ManageEtcHosts, doc.Packages = s.hostname, true, []string{"avahi-daemon"}
		doc.Apt = &cloudApt{PreserveSourcesList: true, Conf: "Acquire {\n  Check-Date \"false\";\n};\n"}
	}
	doc.Timezone, doc.Locale = s.timezone, s.locale
	if s.keymap != "" {
		doc.Keyboard = &cloudKeymap{Model: "pc105", Layout: s.keymap}
	}
	hasCreds := s.user != "" && s.passHash != ""
	hasKeys := s.sshEnabled && len(s.keys) > 0
	if hasCreds || hasKeys {
		u := &cloudUser{Name: cmp.Or(s.user, "pi"), Shell: "/bin/bash", LockPasswd: s.passHash == "", Passwd: s.passHash}
		if hasKeys {
			u.SSHAuthorizedKeys = s.keys
		}
		doc.User = u
	}
	if s.sshEnabled && (s.sshPasswordAuth || len(s.keys) > 0) {
		doc.SSHPasswordAuth = &s.sshPasswordAuth
	}
	if s.sshEnabled {
		doc.RunCmd = append(doc.RunCmd, cloudRunCmd{"systemctl", "enable", "--now", "ssh"})
	}
	if s.country != "" && s.ssid == "" {
		doc.RunCmd = append(doc.RunCmd, cloudRunCmd{"rfkill", "unblock", "wifi"},
			cloudRunCmd{"sh", "-c", `for f in /var/lib/systemd/rfkill/*:wlan; do echo 0 > "$f"; done`})
	}
	if reflect.ValueOf(doc).IsZero() {
		return nil, nil
	}
	return encodeYAML(doc)
}

// netplan is the cloud-init formats' network-config (netplan version 2).
type netplan struct {
	Network struct {
		Version   int                        `yaml:"version"`
		Ethernets map[string]netplanEthernet `yaml:"ethernets"`
		WiFis     map[string]netplanWiFi     `yaml:"wifis"`
	} `yaml:"network"`
}

type netplanEthernet struct {
	DHCP4    bool `yaml:"dhcp4"`
	DHCP6    bool `yaml:"dhcp6"`
	Optional bool `yaml:"optional"`
}

type netplanWiFi struct {
	DHCP4            bool                          `yaml:"dhcp4"`
	RegulatoryDomain string                        `yaml:"regulatory-domain,omitempty"`
	AccessPoints     map[string]netplanAccessPoint `yaml:"access-points"`
	Optional         bool                          `yaml:"optional"`
}

type netplanAccessPoint struct {
	Hidden   bool         `yaml:"hidden,omitempty"`
	Auth     *netplanAuth `yaml:"auth,omitempty"`
	Password string       `yaml:"password,omitempty"`
}

type netplanAuth struct {
	KeyManagement string `yaml:"key-management"`
}

// networkConfig is the cloud-init formats' network-config: Wi-Fi beside
// a wired DHCP, nil without a network.
func (s *settings) networkConfig() ([]byte, error) {
	if s.ssid == "" {
		return nil, nil
	}
	var doc netplan
	doc.Network.Version = 2
	doc.Network.Ethernets = map[string]netplanEthernet{"eth0": {DHCP4: true, DHCP6: true, Optional: true}}
	ap := netplanAccessPoint{Hidden: s.hidden, Password: s.psk}
	if s.psk == "" {
		ap.Auth = &netplanAuth{KeyManagement: "none"}
	}
	doc.Network.WiFis = map[string]netplanWiFi{"wlan0": {DHCP4: true, RegulatoryDomain: strings.ToUpper(s.country),
		AccessPoints: map[string]netplanAccessPoint{s.ssid: ap}, Optional: true}}
	return encodeYAML(doc)
}

// metaData is the cloud-init formats' meta-data.
func metaData(instanceID string) ([]byte, error) {
	return encodeYAML(struct {
		InstanceID string `yaml:"instance-id"`
	}{instanceID})
}

// preseedFile is rpi-preseed.toml: each table present when something is
// asked of it.
type preseedFile struct {
	ConfigVersion string         `toml:"config_version"`
	System        *preseedSystem `toml:"system,omitempty"`
	User          *preseedUser   `toml:"user,omitempty"`
	SSH           *preseedSSH    `toml:"ssh,omitempty"`
	WLAN          *preseedWLAN   `toml:"wlan,omitempty"`
	Locale        *preseedLocale `toml:"locale,omitempty"`
}

type preseedSystem struct {
	Hostname string `toml:"hostname"`
}

type preseedUser struct {
	Name              string   `toml:"name"`
	Password          string   `toml:"password,omitempty"`
	PasswordEncrypted bool     `toml:"password_encrypted,omitempty"`
	Groups            []string `toml:"groups"`
}

type preseedSSH struct {
	Enabled                bool     `toml:"enabled"`
	PasswordAuthentication bool     `toml:"password_authentication"`
	AuthorizedKeys         []string `toml:"authorized_keys,omitempty"`
}

type preseedWLAN struct {
	SSID              string `toml:"ssid"`
	Password          string `toml:"password,omitempty"`
	PasswordEncrypted bool   `toml:"password_encrypted,omitempty"`
	Hidden            bool   `toml:"hidden"`
	Country           string `toml:"country,omitempty"`
}

type preseedLocale struct {
	Keymap   string `toml:"keymap,omitempty"`
	Timezone string `toml:"timezone,omitempty"`
}

// preseed is the rpi-preseed format's rpi-preseed.toml, nil when nothing
// is asked of it.
func (s *settings) preseed() ([]byte, error) {
	doc := preseedFile{ConfigVersion: "1.0"}
	if s.hostname != "" {
		doc.System = &preseedSystem{Hostname: s.hostname}
	}
	if s.user != "" || s.passHash != "" {
		doc.User = &preseedUser{Name: cmp.Or(s.user, "pi"), Password: s.passHash, PasswordEncrypted: s.passHash != "", Groups: []string{"sudo"}}
	}
	if s.sshEnabled {
		doc.SSH = &preseedSSH{Enabled: true, PasswordAuthentication: s.sshPasswordAuth, AuthorizedKeys: s.keys}
	}
	if s.ssid != "" {
		// The key is always the 64 hex digits (WiFiKey derives them).
		doc.WLAN = &preseedWLAN{SSID: s.ssid, Password: s.psk, PasswordEncrypted: s.psk != "", Hidden: s.hidden, Country: s.country}
	}
	if s.timezone != "" || s.keymap != "" {
		doc.Locale = &preseedLocale{Keymap: s.keymap, Timezone: s.timezone}
	}
	if doc == (preseedFile{ConfigVersion: "1.0"}) {
		return nil, nil
	}
	return encodeTOML(doc)
}

// editConfigTxt applies config.txt lines as Raspberry Pi Imager does: a
// line present as "#line" is uncommented, one present is kept, any other
// appended.
func editConfigTxt(config []byte, lines []string) []byte {
	s := string(config)
	for _, item := range lines {
		if item == "" {
			continue
		}
		switch {
		case strings.Contains(s, "#"+item):
			s = strings.ReplaceAll(s, "#"+item, item)
		case strings.Contains(s, "\n"+item) || strings.HasPrefix(s, item):
		case s != "" && !strings.HasSuffix(s, "\n"):
			s += "\n" + item + "\n"
		default:
			s += item + "\n"
		}
	}
	return []byte(s)
}
