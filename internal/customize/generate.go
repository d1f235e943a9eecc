package customize

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/GehirnInc/crypt/sha512_crypt"
)

// The texts below follow Raspberry Pi Imager's generators
// (src/customization_generator.cpp) line for line, so that an image's
// first-boot tools (raspberrypi-sys-mods' imager_custom, userconf-pi,
// cloud-init, rpi-preseed) read what they were made to read.

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
		ssid: c.WiFi.SSID, country: strings.TrimSpace(c.WiFi.Country), hidden: c.WiFi.Hidden,
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
		h, err := CryptPassword(strings.NewReplacer("\r", "", "\n", "").Replace(c.Password), rnd)
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

// shellQuote quotes v for sh in single quotes.
func shellQuote(v string) string { return "'" + strings.ReplaceAll(v, "'", `'"'"'`) + "'" }

// tomlQuote is v as rpi-preseed's TOML basic string: backslash and quote
// escaped, line breaks dropped.
func tomlQuote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "").Replace(v) + `"`
}

// FirstRun is the systemd format's firstrun.sh: run once by systemd.run
// from the kernel command line, it applies the settings with
// raspberrypi-sys-mods' imager_custom (or by hand where the image lacks
// it), then removes itself and its command-line entry.
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
		line(`CURRENT_HOSTNAME=$(cat /etc/hostname | tr -d " \t\n\r")`,
			"if [ -f "+custom+" ]; then",
			"   "+custom+" set_hostname "+s.hostname,
			"else",
			"   echo "+s.hostname+" >/etc/hostname",
			`   sed -i "s/127.0.1.1.*$CURRENT_HOSTNAME/127.0.1.1\t`+s.hostname+`/g" /etc/hosts`,
			"fi")
	}
	line("FIRSTUSER=$(getent passwd 1000 | cut -d: -f1)", "FIRSTUSERHOME=$(getent passwd 1000 | cut -d: -f6)")
	if len(s.keys) > 0 {
		var args strings.Builder
		for _, k := range s.keys {
			args.WriteString(" " + shellQuote(k))
		}
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
		line("if [ -f /usr/lib/userconf-pi/userconf ]; then",
			"   /usr/lib/userconf-pi/userconf "+shellQuote(user)+" "+shellQuote(s.passHash),
			"else")
		if s.passHash != "" {
			line(`   echo "$FIRSTUSER:` + s.passHash + `" | chpasswd -e`)
		}
		line(`   if [ "$FIRSTUSER" != "`+user+`" ]; then`,
			`      usermod -l "`+user+`" "$FIRSTUSER"`,
			`      usermod -m -d "/home/`+user+`" "`+user+`"`,
			`      groupmod -n "`+user+`" "$FIRSTUSER"`,
			`      if grep -q "^autologin-user=" /etc/lightdm/lightdm.conf ; then`,
			`         sed /etc/lightdm/lightdm.conf -i -e "s/^autologin-user=.*/autologin-user=`+user+`/"`,
			"      fi",
			"      if [ -f /etc/systemd/system/getty@tty1.service.d/autologin.conf ]; then",
			`         sed /etc/systemd/system/getty@tty1.service.d/autologin.conf -i -e "s/$FIRSTUSER/`+user+`/"`,
			"      fi",
			"      if [ -f /etc/sudoers.d/010_pi-nopasswd ]; then",
			`         sed -i "s/^$FIRSTUSER /`+user+` /" /etc/sudoers.d/010_pi-nopasswd`,
			"      fi",
			"   fi",
			"fi")
	}
	if s.ssid != "" {
		safe := utf8.ValidString(s.ssid) && !strings.ContainsRune(s.ssid, 0)
		cond := "false"
		if safe {
			cond = "true"
		}
		line("if [ -f " + custom + " ] && " + cond + "; then")
		if safe {
			cmd := "   " + custom + " set_wlan "
			if s.hidden {
				cmd += " -h "
			}
			line(cmd + shellQuote(s.ssid) + " " + shellQuote(s.psk) + " " + shellQuote(s.country))
		}
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
			"       echo 0 > $filename",
			"   done",
			"fi")
	} else if s.country != "" {
		line("rfkill unblock wifi", "for filename in /var/lib/systemd/rfkill/*:wlan ; do", "  echo 0 > $filename", "done")
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
			line("   rm -f /etc/localtime", `   echo "`+s.timezone+`" >/etc/timezone`, "   dpkg-reconfigure -f noninteractive tzdata")
		}
		if s.keymap != "" {
			line("cat >/etc/default/keyboard <<'KBEOF'", `XKBMODEL="pc105"`, `XKBLAYOUT="`+s.keymap+`"`, `XKBVARIANT=""`, `XKBOPTIONS=""`, "", "KBEOF",
				"   dpkg-reconfigure -f noninteractive keyboard-configuration")
		}
		line("fi")
	}
	line("rm -f /boot/firstrun.sh", "sed -i 's| systemd.run.*||g' /boot/cmdline.txt", "exit 0")
	return []byte(b.String())
}

// wpaSSID is wpa_supplicant.conf's ssid line: quoted, or in hex when the
// SSID is not plain UTF-8 text.
func wpaSSID(ssid string) string {
	hexed := !utf8.ValidString(ssid)
	for i := 0; i < len(ssid) && !hexed; i++ {
		c := ssid[i]
		hexed = c < 0x20 || c == 0x7f || c == '\\' || c == '"'
	}
	if hexed {
		return "\tssid=hex:" + hex.EncodeToString([]byte(ssid))
	}
	return "\tssid=\"" + ssid + "\""
}

// yamlEscape escapes v for a YAML double-quoted string, byte by byte.
func yamlEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case 0:
			b.WriteString(`\0`)
		default:
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
	}
	return b.String()
}

// userData is the cloud-init formats' user-data (without its
// "#cloud-config" line), empty when nothing is asked of it.
func (s *settings) userData() []byte {
	var b strings.Builder
	push := func(l ...string) {
		for _, x := range l {
			if x != "" {
				b.WriteString(x + "\n")
			}
		}
	}
	if s.hostname != "" {
		push("hostname: "+s.hostname, "manage_etc_hosts: true", "packages:", "- avahi-daemon",
			"apt:", "  preserve_sources_list: true", "  conf: |", "    Acquire {", `      Check-Date "false";`, "    };")
	}
	if s.timezone != "" {
		push("timezone: " + s.timezone)
	}
	if s.locale != "" {
		push("locale: " + s.locale)
	}
	if s.keymap != "" {
		push("keyboard:", "  model: pc105", `  layout: "`+s.keymap+`"`)
	}
	hasCreds := s.user != "" && s.passHash != ""
	hasKeys := s.sshEnabled && len(s.keys) > 0
	user := s.user
	if user == "" {
		user = "pi"
	}
	if hasCreds || hasKeys {
		push("user:", "  name: "+user, "  shell: /bin/bash")
		if s.passHash != "" {
			push("  lock_passwd: false", `  passwd: "`+s.passHash+`"`)
		} else {
			push("  lock_passwd: true")
		}
		if hasKeys {
			push("  ssh_authorized_keys:")
			for _, k := range s.keys {
				push(`    - "` + k + `"`)
			}
		}
		push("  sudo: null")
	}
	if s.sshEnabled {
		if s.sshPasswordAuth {
			push("ssh_pwauth: true")
		} else if len(s.keys) > 0 {
			push("ssh_pwauth: false")
		}
	}
	wifiRuncmd := s.country != "" && s.ssid == ""
	if s.sshEnabled || wifiRuncmd {
		b.WriteString("\n")
		push("runcmd:")
		if s.sshEnabled {
			push("  - [ systemctl, enable, --now, ssh ]")
		}
		if wifiRuncmd {
			push("  - [ rfkill, unblock, wifi ]", `  - [ sh, -c, "for f in /var/lib/systemd/rfkill/*:wlan; do echo 0 > \"$f\"; done" ]`)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return []byte("manage_resolv_conf: false\n\n" + b.String())
}

// networkConfig is the cloud-init formats' network-config (netplan
// version 2): Wi-Fi beside a wired DHCP, nil without a network.
func (s *settings) networkConfig() []byte {
	if s.ssid == "" {
		return nil
	}
	var b strings.Builder
	push := func(l ...string) {
		for _, x := range l {
			b.WriteString(x + "\n")
		}
	}
	push("network:", "  version: 2", "  ethernets:", "    eth0:", "      dhcp4: true", "      dhcp6: true", "      optional: true",
		"  wifis:", "    wlan0:", "      dhcp4: true")
	if s.country != "" {
		push(`      regulatory-domain: "` + strings.ToUpper(s.country) + `"`)
	}
	push("      access-points:", `        "`+yamlEscape(s.ssid)+`":`)
	if s.hidden {
		push("          hidden: true")
	}
	if s.psk == "" {
		push("          auth:", "            key-management: none")
	} else {
		push(`          password: "` + strings.ReplaceAll(s.psk, `"`, `\"`) + `"`)
	}
	push("      optional: true")
	return []byte(b.String())
}

// preseed is the rpi-preseed format's rpi-preseed.toml, nil when nothing
// is asked of it.
func (s *settings) preseed() []byte {
	var b strings.Builder
	push := func(l ...string) {
		for _, x := range l {
			b.WriteString(x + "\n")
		}
	}
	if s.hostname != "" {
		push("[system]", "hostname = "+tomlQuote(s.hostname), "")
	}
	if s.user != "" || s.passHash != "" {
		user := s.user
		if user == "" {
			user = "pi"
		}
		push("[user]", "name = "+tomlQuote(user))
		if s.passHash != "" {
			push("password = "+tomlQuote(s.passHash), "password_encrypted = true")
		}
		push(`groups = ["sudo"]`, "")
	}
	if s.sshEnabled {
		push("[ssh]", "enabled = true", fmt.Sprintf("password_authentication = %t", s.sshPasswordAuth))
		if len(s.keys) > 0 {
			push("authorized_keys = [")
			for _, k := range s.keys {
				push("  " + tomlQuote(k) + ",")
			}
			push("]")
		}
		push("")
	}
	if s.ssid != "" {
		push("[wlan]")
		if utf8.ValidString(s.ssid) {
			push("ssid = " + tomlQuote(s.ssid))
		} else {
			push("ssid_hex = " + tomlQuote(hex.EncodeToString([]byte(s.ssid))))
		}
		if s.psk != "" {
			push("password = "+tomlQuote(s.psk), fmt.Sprintf("password_encrypted = %t", len(s.psk) == 64 && isHex(s.psk)))
		}
		push(fmt.Sprintf("hidden = %t", s.hidden))
		if s.country != "" {
			push("country = " + tomlQuote(s.country))
		}
		push("")
	}
	if s.timezone != "" || s.keymap != "" {
		push("[locale]")
		if s.keymap != "" {
			push("keymap = " + tomlQuote(s.keymap))
		}
		if s.timezone != "" {
			push("timezone = " + tomlQuote(s.timezone))
		}
		push("")
	}
	if b.Len() == 0 {
		return nil
	}
	return []byte(strings.TrimRight("config_version = \"1.0\"\n\n"+b.String(), "\n") + "\n")
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
