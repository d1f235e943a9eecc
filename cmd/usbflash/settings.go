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
	switch s {
	case flash.SettingTransferSize:
		return "--transfer-size"
	case flash.SettingBuffers:
		return "--buffers"
	case flash.SettingLag:
		return "--lag"
	case flash.SettingSHA256:
		return "--sha256"
	case flash.SettingKeyring:
		return "--sha256-keyring"
	case flash.SettingKeyringNoSHA256:
		return "--sha256-keyring and --no-sha256"
	case flash.SettingKeyringSHA256:
		return "--sha256-keyring and --sha256"
	case flash.SettingCache:
		return "--cache"
	case flash.SettingCatalog:
		return "--catalog"
	case flash.SettingSize:
		return "--size"
	case flash.SettingOut:
		return "OUT"
	case flash.SettingBlockMap:
		return "--bmap and --no-bmap"
	case flash.SettingSparse:
		return "--sparse and --bmap"
	case cardbench.SettingCompare:
		return "--compare"
	case cardbench.SettingSizes:
		return "--sizes"
	case cardbench.SettingRegion:
		return "--region"
	case cardbench.SettingPreserve:
		return "--preserve --region"
	case customize.SettingFile:
		return "--customize"
	case customize.SettingInitFormat:
		return "--init-format"
	case customize.SettingSSHKey:
		return "--ssh-key"
	}
	return ""
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
