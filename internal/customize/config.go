// Package customize writes an operating system's first-boot settings
// (hostname, user, SSH, Wi-Fi, locale, cloud-init) into the FAT boot
// partition of a written image, as Raspberry Pi Imager does, through a
// byte view of the card and never a mount.
package customize

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"

	"github.com/usbflash/usbflash/internal/failure"
)

// Settings a Config error can be about (cmd names their flags).
const (
	SettingFile       failure.Setting = "customize"
	SettingInitFormat failure.Setting = "init-format"
	SettingSSHKey     failure.Setting = "ssh-key"
)

// Config is what a card gets on its first boot. Every value may hold the
// templates of Vars ({n}, {usb_serial}, {card_serial}); an empty value
// leaves that part of the system as the image has it.
type Config struct {
	Hostname string `toml:"hostname" yaml:"hostname"`
	// User is the account renamed from the image's first user (uid
	// 1000); Password is its password in clear, PasswordHash a crypt(3)
	// hash used as it is (one of them).
	User         string `toml:"user" yaml:"user"`
	Password     string `toml:"password" yaml:"password"`
	PasswordHash string `toml:"password_hash" yaml:"password_hash"`
	// SSH turns the SSH server on; SSHKeys are authorized public keys;
	// SSHPasswordAuth allows logging in with the password (off when keys
	// are given and it is not set).
	SSH             bool     `toml:"ssh" yaml:"ssh"`
	SSHKeys         []string `toml:"ssh_keys" yaml:"ssh_keys"`
	SSHPasswordAuth *bool    `toml:"ssh_password_auth" yaml:"ssh_password_auth"`
	WiFi            WiFi     `toml:"wifi" yaml:"wifi"`
	Locale          string   `toml:"locale" yaml:"locale"`
	Keymap          string   `toml:"keymap" yaml:"keymap"`
	Timezone        string   `toml:"timezone" yaml:"timezone"`
	// ConfigTxt are lines for config.txt: uncommented where present as
	// "#line", else appended.
	ConfigTxt []string `toml:"config_txt" yaml:"config_txt"`
	// Files are copied into the boot partition: name there -> path here.
	Files map[string]string `toml:"files" yaml:"files"`
	// FirstRun is a script of the user's own run at first boot in place
	// of the generated firstrun.sh (systemd format).
	FirstRun string `toml:"first_run" yaml:"first_run"`
	// UserData and NetworkConfig are the user's own cloud-init files
	// (paths), written as they are in place of the generated ones.
	UserData      string `toml:"user_data" yaml:"user_data"`
	NetworkConfig string `toml:"network_config" yaml:"network_config"`
	// InitFormat is auto (or empty), systemd, cloudinit, cloudinit-rpi or
	// rpi-preseed.
	InitFormat string `toml:"init_format" yaml:"init_format"`
}

// WiFi is the wireless network a card joins.
type WiFi struct {
	SSID string `toml:"ssid" yaml:"ssid"`
	// Password is the passphrase (8 to 63 characters, stored as its
	// PBKDF2 key) or the 64 hex digits of the key itself; empty: an open
	// network.
	Password string `toml:"password" yaml:"password"`
	Country  string `toml:"country" yaml:"country"`
	Hidden   bool   `toml:"hidden" yaml:"hidden"`
}

// Load reads a Config from a TOML (.toml) or YAML (.yaml, .yml) file;
// relative paths in it are taken from the file's directory.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, &failure.SettingError{Setting: SettingFile, Err: err}
	}
	var c Config
	switch strings.ToLower(filepath.Ext(path)) {
	case ".toml":
		md, derr := toml.NewDecoder(bytes.NewReader(data)).Decode(&c)
		err = derr
		if err == nil {
			if un := md.Undecoded(); len(un) > 0 {
				err = fmt.Errorf("unknown key %s", un[0])
			}
		}
	case ".yaml", ".yml":
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		err = dec.Decode(&c)
	default:
		err = errors.New("not a .toml, .yaml or .yml file")
	}
	if err != nil {
		return Config{}, &failure.SettingError{Setting: SettingFile, Err: fmt.Errorf("%s: %w", path, parseError(err))}
	}
	c.resolve(filepath.Dir(path))
	for i, k := range c.SSHKeys {
		if c.SSHKeys[i], err = ParseKey(k); err != nil {
			return Config{}, &failure.SettingError{Setting: SettingFile, Err: fmt.Errorf("%s: ssh_keys: %w", path, (&ValueError{Value: k, Rule: ruleSSHKey}))}
		}
	}
	// The file's values are checked as the file's: an error names the
	// file and the key, not a flag that may give the same setting.
	if err := c.Check(); err != nil {
		var ve *ValueError
		var se *failure.SettingError
		switch {
		case errors.As(err, &ve) && ve.Value == "":
			err = fmt.Errorf("%s: %w", ve.Key, ve) // a secret: the rule alone
		case errors.As(err, &ve):
			err = fmt.Errorf("%s %w", ve.Key, ve)
		case errors.As(err, &se) && se.Setting == SettingInitFormat:
			err = fmt.Errorf("init_format %w", se.Err)
		case errors.As(err, &se):
			err = se.Err
		}
		return Config{}, &failure.SettingError{Setting: SettingFile, Err: fmt.Errorf("%s: %w", path, err)}
	}
	return c, nil
}

// secretKeys are the keys of a settings file whose values no message
// shows.
var secretKeys = []string{"password", "password_hash", "wifi.password"}

// yamlQuoted is a value as yaml's type errors quote it.
var yamlQuoted = regexp.MustCompile("`[^`]*` ?")

// parseError is a settings file's parse error without the file's text
// where it may be a secret: the TOML parser quotes the value it stopped
// at (a password left unquoted), the YAML decoder each value of the wrong
// type (a passphrase under another key). The line and key still say
// where.
func parseError(err error) error {
	var pe toml.ParseError
	var te *yaml.TypeError
	switch {
	case errors.As(err, &pe) && slices.Contains(secretKeys, pe.LastKey):
		return fmt.Errorf("line %d: the value of %s is not TOML (not shown: a secret)", pe.Position.Line, pe.LastKey)
	case errors.As(err, &te):
		lines := make([]string, len(te.Errors))
		for i, l := range te.Errors {
			lines[i] = yamlQuoted.ReplaceAllString(l, "")
		}
		return errors.New(strings.Join(lines, "; "))
	}
	return err
}

// resolve makes the paths of c relative to dir absolute.
func (c *Config) resolve(dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	c.FirstRun, c.UserData, c.NetworkConfig = abs(c.FirstRun), abs(c.UserData), abs(c.NetworkConfig)
	for k, v := range c.Files {
		c.Files[k] = abs(v)
	}
}

// Empty is a Config that asks for nothing.
func (c *Config) Empty() bool {
	return c.Hostname == "" && c.User == "" && c.Password == "" && c.PasswordHash == "" && !c.SSH &&
		len(c.SSHKeys) == 0 && c.WiFi == (WiFi{}) && c.Locale == "" && c.Keymap == "" && c.Timezone == "" &&
		len(c.ConfigTxt) == 0 && len(c.Files) == 0 && c.FirstRun == "" && c.UserData == "" && c.NetworkConfig == ""
}

// Check refuses a Config that cannot be written as asked, before anything
// is: a value that breaks its kind's rule (validate.go; with its templates
// replaced by exampleVars, each card's own values being checked by For),
// both a password and a hash, a Wi-Fi password without a network, a file
// that cannot be read or that cloud-init would not take.
func (c *Config) Check() error {
	bad := func(format string, args ...any) error {
		return &failure.SettingError{Setting: SettingFile, Err: fmt.Errorf(format, args...)}
	}
	if _, err := ParseFormat(c.InitFormat); err != nil {
		return err
	}
	e := c.Expand(exampleVars)
	if ve := checkValues(c, &e); ve != nil {
		return settingError(ve)
	}
	if c.Password != "" && c.PasswordHash != "" {
		return bad("both a password and a password hash")
	}
	if c.WiFi.SSID == "" && (c.WiFi.Password != "" || c.WiFi.Hidden) {
		return bad("a Wi-Fi password or hidden network without an SSID")
	}
	for _, p := range []string{c.FirstRun, c.UserData, c.NetworkConfig} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return &failure.SettingError{Setting: SettingFile, Err: err}
		}
	}
	if c.UserData != "" {
		if err := checkFile("user_data", c.UserData, checkUserData); err != nil {
			return &failure.SettingError{Setting: SettingFile, Err: err}
		}
	}
	if c.NetworkConfig != "" {
		if err := checkFile("network_config", c.NetworkConfig, checkYAMLMapping); err != nil {
			return &failure.SettingError{Setting: SettingFile, Err: err}
		}
	}
	for name, p := range c.Files {
		if err := checkBootName(name); err != nil {
			return bad("files: %s: %w", quote(name), err)
		}
		if _, err := os.Stat(p); err != nil {
			return &failure.SettingError{Setting: SettingFile, Err: err}
		}
	}
	return nil
}

// checkBootName refuses a name no FAT directory entry can have, or one
// that leaves the partition.
func checkBootName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "..") || strings.ContainsAny(name, "\\:*?\"<>|") ||
		strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return errors.New("not a file name inside the boot partition")
	}
	return nil
}

func isHex(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return s != ""
}

// Vars are what the templates in a Config's values stand for on one card.
type Vars struct {
	N          int    // {n}: the card's number in the run, from 1
	USBSerial  string // {usb_serial}: the reader's USB serial number
	CardSerial string // {card_serial}: the card's own serial (its SCSI unit serial)
}

// Expand is c with every template replaced by v's values, unchecked (For
// checks them). A serial is a device's word, hostile input: only its
// letters, digits and single hyphens are put in (deviceValue), and one
// that is unknown expands to "unknown" so two cards never silently share a
// blank.
func (c Config) Expand(v Vars) Config {
	r := strings.NewReplacer("{n}", fmt.Sprint(v.N), "{usb_serial}", deviceValue(v.USBSerial), "{card_serial}", deviceValue(v.CardSerial))
	c.Hostname, c.User, c.Password = r.Replace(c.Hostname), r.Replace(c.User), r.Replace(c.Password)
	c.WiFi.SSID, c.WiFi.Password = r.Replace(c.WiFi.SSID), r.Replace(c.WiFi.Password)
	c.Locale, c.Keymap, c.Timezone = r.Replace(c.Locale), r.Replace(c.Keymap), r.Replace(c.Timezone)
	lines := make([]string, len(c.ConfigTxt))
	for i, l := range c.ConfigTxt {
		lines[i] = r.Replace(l)
	}
	c.ConfigTxt = lines
	return c
}

// Templated says whether any value of c holds a template, so that every
// card gets its own settings.
func (c *Config) Templated() bool {
	e := c.Expand(Vars{N: -1})
	return e.Hostname != c.Hostname || e.User != c.User || e.Password != c.Password || e.WiFi != c.WiFi ||
		e.Locale != c.Locale || e.Keymap != c.Keymap || e.Timezone != c.Timezone || strings.Join(e.ConfigTxt, "\n") != strings.Join(c.ConfigTxt, "\n")
}

// Merge is c with every value o sets put over c's: the command line's
// settings over a file's.
func (c Config) Merge(o Config) Config {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.Hostname, o.Hostname)
	set(&c.User, o.User)
	set(&c.Password, o.Password)
	set(&c.PasswordHash, o.PasswordHash)
	set(&c.WiFi.SSID, o.WiFi.SSID)
	set(&c.WiFi.Password, o.WiFi.Password)
	set(&c.WiFi.Country, o.WiFi.Country)
	set(&c.Locale, o.Locale)
	set(&c.Keymap, o.Keymap)
	set(&c.Timezone, o.Timezone)
	set(&c.InitFormat, o.InitFormat)
	c.SSH = c.SSH || o.SSH
	c.WiFi.Hidden = c.WiFi.Hidden || o.WiFi.Hidden
	c.SSHKeys = append(c.SSHKeys, o.SSHKeys...)
	if o.SSHPasswordAuth != nil {
		c.SSHPasswordAuth = o.SSHPasswordAuth
	}
	c.ConfigTxt = append(c.ConfigTxt, o.ConfigTxt...)
	return c
}

// Compose is the customisation a caller asks for: base's settings (given
// whole, nil for none), or a file's when one is named (Load), with over's
// put over them (Merge), the SSH keys that each of keys stands for
// (ReadKeys) among over's. Over's values are checked as over's (the
// file's were by Load), so an error names the setting that gave one.
func Compose(base *Config, file string, over Config, keys []string) (Config, error) {
	var c Config
	if base != nil {
		c = *base
	}
	if file != "" {
		var err error
		if c, err = Load(file); err != nil {
			return Config{}, err
		}
	}
	for _, k := range keys {
		ks, err := ReadKeys(k)
		if err != nil {
			return Config{}, err
		}
		over.SSHKeys = append(over.SSHKeys, ks...)
	}
	if err := over.Check(); err != nil {
		return Config{}, err
	}
	return c.Merge(over), nil
}

// ReadKeys is the SSH public keys a value stands for: the value itself
// when it is a key (ssh-, ecdsa-, sk- ...), else the keys of the file it
// names (an id_*.pub or an authorized_keys), one a line; each checked
// (ParseKey), an error naming the line.
func ReadKeys(value string) ([]string, error) {
	v := strings.TrimSpace(value)
	for _, p := range []string{"ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-"} {
		if strings.HasPrefix(v, p) {
			key, err := ParseKey(v)
			if err != nil {
				return nil, &failure.SettingError{Setting: SettingSSHKey, Err: &ValueError{Key: "ssh_keys", Value: v, Rule: ruleSSHKey}}
			}
			return []string{key}, nil
		}
	}
	data, err := os.ReadFile(v)
	if err != nil {
		return nil, &failure.SettingError{Setting: SettingSSHKey, Err: err}
	}
	var keys []string
	for i, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		key, err := ParseKey(l)
		if err != nil {
			return nil, &failure.SettingError{Setting: SettingSSHKey, Err: fmt.Errorf("%s line %d: %w", v, i+1, &ValueError{Key: "ssh_keys", Value: l, Rule: ruleSSHKey})}
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, &failure.SettingError{Setting: SettingSSHKey, Err: fmt.Errorf("%s holds no key", v)}
	}
	return keys, nil
}
