package main

import (
	"errors"
	"strings"

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
	case flash.SettingSize:
		return "--size"
	case flash.SettingOut:
		return "OUT"
	}
	return ""
}

// withFlags tells a library's error about a setting in the words of the
// command line, naming the flag that gave the setting: a usage error.
func withFlags(err error) error {
	var se *failure.SettingError
	if !errors.As(err, &se) || flagOf(se.Setting) == "" {
		return err
	}
	return &usageError{strings.Replace(err.Error(), se.Error(), flagOf(se.Setting)+": "+se.Err.Error(), 1)}
}
