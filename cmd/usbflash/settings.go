package main

import (
	"errors"
	"strings"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/session"
)

// flagOf is the command-line name of a setting the libraries' errors are
// about ("" for one no flag gives).
func flagOf(s failure.Setting) string {
	return map[failure.Setting]string{
		session.SettingTransferSize:  "--transfer-size",
		session.SettingBuffers:       "--buffers",
		session.SettingLag:           "--lag",
		image.SettingSHA256:          "--sha256",
		image.SettingKeyring:         "--sha256-keyring",
		image.SettingFingerprint:     "--sha256-fingerprint",
		image.SettingKeyringNoSHA256: "--sha256-keyring and --no-sha256",
		image.SettingKeyringSHA256:   "--sha256-keyring and --sha256",
		image.SettingCache:           "--cache",
		image.SettingCatalog:         "--catalog",
		image.SettingOS:              "--os",
		session.SettingSize:          "--size",
		session.SettingRepair:        "--repair",
		session.SettingOut:           "OUT",
		session.SettingBlockMap:      "--bmap and --no-bmap",
		session.SettingSparse:        "--sparse and --bmap",
		session.SettingLabel:         "--label",
		session.SettingFS:            "--fs",
		session.SettingEraseUnit:     "--erase-unit",
		cardbench.SettingCompare:     "--compare",
		cardbench.SettingSizes:       "--sizes",
		cardbench.SettingRegion:      "--region",
		cardbench.SettingPreserve:    "--preserve --region",
		customize.SettingFile:        "--customize",
		customize.SettingInitFormat:  "--init-format",
		customize.SettingSSHKey:      "--ssh-key",
		customize.SettingHostname:    "--hostname",
		customize.SettingUser:        "--user",
		customize.SettingWiFiSSID:    "--wifi-ssid",
		customize.SettingWiFiCountry: "--wifi-country",
		customize.SettingTimezone:    "--timezone",
		customize.SettingKeymap:      "--keymap",
	}[s]
}

// settingFlagError is a library's error about a setting, told in the words of
// the command line: the flag that gave the setting. It keeps the error's
// chain, for its kind's advice.
type settingFlagError struct {
	msg string
	err error
}

func (e *settingFlagError) Error() string        { return e.msg }
func (e *settingFlagError) Unwrap() error        { return e.err }
func (e *settingFlagError) Class() failure.Class { return failure.Usage }

// withFlags names the flag of the setting err is about, if any.
func withFlags(err error) error {
	var se *failure.SettingError
	if !errors.As(err, &se) || flagOf(se.Setting) == "" {
		return err
	}
	return &settingFlagError{msg: strings.Replace(err.Error(), se.Error(), flagOf(se.Setting)+": "+se.Err.Error(), 1), err: err}
}
