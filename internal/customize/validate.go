package customize

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	_ "time/tzdata" // time zones are checked against Go's copy of the IANA database, also on hosts without one
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"

	"github.com/usbflash/usbflash/internal/failure"
)

// Every value of a Config ends up as data in a file a first boot reads as
// root: a shell script, YAML, TOML, config.txt, wpa_supplicant.conf. Each
// is checked here against the rule of its kind's standard before anything
// is written, and the generators quote it for their language besides, so
// that neither alone keeps a value from becoming code.
//
// The values a device reports ({usb_serial}, {card_serial}) are hostile
// input: a reader or a stick says what it likes. They are cut down to
// letters, digits and single hyphens before they go into a value
// (deviceValue), rather than refusing the card: a serial is not the
// user's to change, and most real ones hold characters no host name may
// (spaces, underscores, dots); what is kept still tells the boards apart.
// The value is then checked like any other: one that still breaks its rule
// (a 70-character serial in a host name) refuses that card alone, when it
// is opened, before its first byte.

// Settings a value can be about, besides SettingFile's: the values the
// command line also gives, so that an error names where the value came
// from.
const (
	SettingHostname    failure.Setting = "hostname"
	SettingUser        failure.Setting = "user"
	SettingWiFiSSID    failure.Setting = "wifi-ssid"
	SettingWiFiCountry failure.Setting = "wifi-country"
	SettingTimezone    failure.Setting = "timezone"
	SettingKeymap      failure.Setting = "keymap"
)

// The rules, as an error states them.
const (
	ruleHostname = "a host name is 1 to 63 letters, digits and hyphens, not beginning or ending with a hyphen (RFC 1123)"
	ruleUser     = "a user name is 1 to 32 lower-case letters, digits, underscores and hyphens, beginning with a letter or an underscore (Raspberry Pi Imager's and useradd's rule)"
	ruleCountry  = "a Wi-Fi country is an ISO 3166-1 alpha-2 code: GB, US, DE, ..."
	ruleTimezone = "a time zone is a name of the IANA time zone database: Europe/London, America/New_York, UTC, ..."
	ruleKeymap   = "a keymap is an XKB keyboard layout: gb, us, de, fr, ..."
	ruleLocale   = "a locale is language[_TERRITORY][.codeset][@modifier], as en_GB.UTF-8, or C or POSIX"
	ruleSSID     = "an SSID is 1 to 32 bytes of UTF-8 text without control characters"
	rulePSK      = "a Wi-Fi password is 8 to 63 printable ASCII characters, or the key's 64 hexadecimal digits"
	rulePassword = "a password holds no control characters (line breaks included)"
	ruleHash     = "a password hash is a crypt(3) hash, as $6$salt$hash or $y$j9T$salt$hash"
	ruleSSHKey   = "an SSH public key is one line: its type (ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256/384/521, sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com), its base64 body and an optional comment, without options or control characters"
	ruleLine     = "a config.txt line holds no control characters (line breaks included)"
)

var (
	hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)
	userRE     = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	timezoneRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`)
	localeRE   = regexp.MustCompile(`^[a-z]{2,3}(_([A-Z]{2}))?(\.[A-Za-z0-9][A-Za-z0-9-]*)?(@[A-Za-z][A-Za-z0-9]*)?$`)
	hashRE     = regexp.MustCompile(`^\$[a-z0-9]{1,3}\$[A-Za-z0-9./$=,]+$`)
)

// ValueError is a value that breaks its kind's rule.
type ValueError struct {
	Key string // its key in a settings file: hostname, wifi.country, ...
	// Value is the value as given; Expanded the same with its templates
	// replaced, when that differs. Both are "" for a secret, which no
	// message shows.
	Value, Expanded string
	Rule            string
}

func (e *ValueError) Error() string {
	switch {
	case e.Value == "" && e.Expanded == "":
		return e.Rule
	case e.Expanded != "" && e.Expanded != e.Value:
		return fmt.Sprintf("%s becomes %s, which breaks the rule: %s", quote(e.Value), quote(e.Expanded), e.Rule)
	}
	return fmt.Sprintf("%s breaks the rule: %s", quote(e.Value), e.Rule)
}

// quote is a value as a message shows it: in Go's double quotes, control
// characters escaped, at most 80 characters of it.
func quote(v string) string {
	if utf8.RuneCountInString(v) > 80 {
		return fmt.Sprintf("%.80q...", v)
	}
	return fmt.Sprintf("%q", v)
}

// setting is the setting a value's key is about: the command line's when
// it gives one, else the file's.
func setting(key string) failure.Setting {
	switch key {
	case "hostname":
		return SettingHostname
	case "user":
		return SettingUser
	case "ssh_keys":
		return SettingSSHKey
	case "wifi.ssid":
		return SettingWiFiSSID
	case "wifi.country":
		return SettingWiFiCountry
	case "timezone":
		return SettingTimezone
	case "keymap":
		return SettingKeymap
	}
	return SettingFile
}

// settingError is a value's error as a setting's: a key only a file gives
// is named in the message, the others by their setting.
func settingError(e *ValueError) error {
	s := setting(e.Key)
	if s == SettingFile {
		return &failure.SettingError{Setting: s, Err: fmt.Errorf("%s: %w", e.Key, e)}
	}
	return &failure.SettingError{Setting: s, Err: e}
}

// exampleVars are the values the templates are checked with before any
// card is known: card 1, and a serial of one letter (each card's own are
// checked again when it is opened: For).
var exampleVars = Vars{N: 1, USBSerial: "x", CardSerial: "x"}

// checkValues checks every value of e (c with its templates replaced)
// against its rule; an error quotes c's value and e's.
func checkValues(c, e *Config) *ValueError {
	bad := func(key, value, expanded, rule string) *ValueError {
		return &ValueError{Key: key, Value: value, Expanded: expanded, Rule: rule}
	}
	type check struct {
		key, value, expanded string
		ok                   func(string) bool
		rule                 string
	}
	for _, k := range []check{
		{"hostname", c.Hostname, e.Hostname, hostnameRE.MatchString, ruleHostname},
		{"user", c.User, e.User, userRE.MatchString, ruleUser},
		{"wifi.ssid", c.WiFi.SSID, e.WiFi.SSID, validSSID, ruleSSID},
		{"wifi.country", c.WiFi.Country, e.WiFi.Country, validCountry, ruleCountry},
		{"timezone", c.Timezone, e.Timezone, validTimezone, ruleTimezone},
		{"keymap", c.Keymap, e.Keymap, func(v string) bool { return listed(keymaps, v) }, ruleKeymap},
		{"locale", c.Locale, e.Locale, validLocale, ruleLocale},
	} {
		if k.expanded != "" && !k.ok(k.expanded) {
			return bad(k.key, k.value, k.expanded, k.rule)
		}
	}
	if e.Password != "" && strings.IndexFunc(e.Password, unicode.IsControl) >= 0 {
		return bad("password", "", "", rulePassword)
	}
	if e.PasswordHash != "" && !hashRE.MatchString(e.PasswordHash) {
		return bad("password_hash", "", "", ruleHash)
	}
	if p := e.WiFi.Password; p != "" && !validPSK(p) {
		return bad("wifi.password", "", "", fmt.Sprintf("%d characters: %s", utf8.RuneCountInString(p), rulePSK))
	}
	for _, k := range e.SSHKeys {
		if _, err := ParseKey(k); err != nil {
			return bad("ssh_keys", k, "", ruleSSHKey)
		}
	}
	for i, l := range e.ConfigTxt {
		if strings.IndexFunc(l, unicode.IsControl) >= 0 {
			return bad("config_txt", c.ConfigTxt[i], l, ruleLine)
		}
	}
	return nil
}

func validSSID(v string) bool {
	return len(v) <= 32 && utf8.ValidString(v) && strings.IndexFunc(v, unicode.IsControl) < 0
}

func validCountry(v string) bool { return len(v) == 2 && listed(countryCodes, strings.ToUpper(v)) }

// validTimezone takes the names of the IANA database, as Go's copy of it
// (time/tzdata, embedded) or the host's has them; not "Local", which is
// the host's own zone.
func validTimezone(v string) bool {
	if !timezoneRE.MatchString(v) || v == "Local" {
		return false
	}
	_, err := time.LoadLocation(v)
	return err == nil
}

func validLocale(v string) bool {
	if v == "C" || v == "POSIX" || strings.HasPrefix(v, "C.") && validLocale("en_US"+v[1:]) {
		return true
	}
	m := localeRE.FindStringSubmatch(v)
	return m != nil && (m[2] == "" || listed(countryCodes, m[2]))
}

// validPSK: a passphrase of 8 to 63 printable ASCII characters (IEEE
// 802.11i, what wpa_passphrase takes), or the 64 hex digits of the key.
func validPSK(p string) bool {
	if len(p) == 64 {
		return isHex(p)
	}
	if len(p) < 8 || len(p) > 63 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] > 0x7e {
			return false
		}
	}
	return true
}

// sshKeyTypes are the key types an authorized_keys line may have here:
// OpenSSH's user keys (not DSA, which it no longer takes, nor
// certificates, which need a cert-authority line).
var sshKeyTypes = []string{ssh.KeyAlgoED25519, ssh.KeyAlgoRSA, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384,
	ssh.KeyAlgoECDSA521, ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256}

// ErrNotSSHKey is a line that is not an SSH public key.
var ErrNotSSHKey = errors.New(ruleSSHKey)

// ParseKey is an SSH public key line as authorized_keys takes it, in
// OpenSSH's form (type, base64 body, comment), checked: one key of a
// known type whose body decodes as that type's, a comment without
// control characters, no options (command="..." would be code).
func ParseKey(line string) (string, error) {
	line = strings.TrimSpace(line)
	if line == "" || strings.IndexFunc(line, unicode.IsControl) >= 0 {
		return "", ErrNotSSHKey
	}
	typ, _, _ := strings.Cut(line, " ")
	known := false
	for _, t := range sshKeyTypes {
		known = known || typ == t
	}
	if !known {
		return "", ErrNotSSHKey
	}
	key, comment, options, rest, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil || len(options) > 0 || len(strings.TrimSpace(string(rest))) > 0 || key.Type() != typ {
		return "", ErrNotSSHKey
	}
	out := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
	if comment != "" {
		out += " " + comment
	}
	return out, nil
}

// deviceValue is a value a device reported, made safe to put into any
// value: its letters and digits (ASCII), every other run of characters
// one hyphen between them, "unknown" when nothing is left.
func deviceValue(s string) string {
	var b strings.Builder
	gap := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < utf8.RuneSelf && (unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))) {
			if gap && b.Len() > 0 {
				b.WriteByte('-')
			}
			gap = false
			b.WriteByte(c)
			continue
		}
		gap = true
	}
	if b.Len() == 0 {
		return "unknown"
	}
	return b.String()
}

// DeviceValueError is a card whose device's serial, put into a template,
// makes a value that breaks its rule: that card is refused before its
// first byte, the others go on.
type DeviceValueError struct {
	Err error // the value's *ValueError, as a setting's
}

func (e *DeviceValueError) Error() string { return e.Err.Error() + " (with this card's serials)" }
func (e *DeviceValueError) Unwrap() error { return e.Err }

// Class is Refused: the device, not the command, gave the value.
func (e *DeviceValueError) Class() failure.Class { return failure.Refused }

// For is c with one card's values of the templates, checked: a value that
// breaks its rule with this card's values is an error (a
// *DeviceValueError, Refused, when the device's serial made it so; a
// setting's, Usage, when the card's number did).
func (c Config) For(v Vars) (Config, error) {
	e := c.Expand(v)
	ve := checkValues(&c, &e)
	if ve == nil {
		return e, nil
	}
	numbered := c.Expand(Vars{N: v.N, USBSerial: exampleVars.USBSerial, CardSerial: exampleVars.CardSerial})
	if checkValues(&c, &numbered) == nil {
		return e, &DeviceValueError{Err: settingError(ve)}
	}
	return e, settingError(ve)
}
