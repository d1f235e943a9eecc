package main

import (
	"errors"
	"strings"

	"github.com/usbflash/usbflash/cardbench"
	"github.com/usbflash/usbflash/customize"
	"github.com/usbflash/usbflash/failure"
	"github.com/usbflash/usbflash/flash"
)

// flagOf is the command-line name of a setting the libraries' errors are
// about ("" for one no flag gives).
func flagOf(s failure.Setting) string {
	return map[failure.Setting]string{
		flash.SettingTransferSize:    "--transfer-size",
		flash.SettingBuffers:         "--buffers",
		flash.SettingLag:             "--lag",
		flash.SettingSHA256:          "--sha256",
		flash.SettingKeyring:         "--sha256-keyring",
		flash.SettingFingerprint:     "--sha256-fingerprint",
		flash.SettingKeyringNoSHA256: "--sha256-keyring and --no-sha256",
		flash.SettingKeyringSHA256:   "--sha256-keyring and --sha256",
		flash.SettingCache:           "--cache",
		flash.SettingCatalog:         "--catalog",
		flash.SettingOS:              "--os",
		flash.SettingSize:            "--size",
		flash.SettingOut:             "OUT",
		flash.SettingBlockMap:        "--bmap and --no-bmap",
		flash.SettingSparse:          "--sparse and --bmap",
		cardbench.SettingCompare:     "--compare",
		cardbench.SettingSizes:       "--sizes",
		cardbench.SettingRegion:      "--region",
		cardbench.SettingPreserve:    "--preserve --region",
		customize.SettingFile:        "--customize",
		customize.SettingInitFormat:  "--init-format",
		customize.SettingSSHKey:      "--ssh-key",
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
