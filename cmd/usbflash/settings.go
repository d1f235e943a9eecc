package main

import (
	"errors"
	"strings"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/sessionview"
	"github.com/usbflash/usbflash/usbms"
)

// settingFlags is the one table of the command line's names for the
// settings the libraries' errors and notices are about: an error about a
// setting (failure.SettingError) names the flag that gave it
// (inFlagWords), and so does a presenter (words: a reader's notice of a
// setting, the flag of a setting its lines name).
// A setting no flag gives is absent.
func settingFlags() map[failure.Setting]string {
	return map[failure.Setting]string{
		usbms.SettingQuirks:          "--quirks",
		usbms.SettingTransport:       "--transport",
		usbms.SettingQueueDepth:      "--queue-depth",
		drive.SettingReaders:         "--readers",
		drive.SettingKernelDisk:      "--compare",
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
		session.SettingEject:         "--eject",
		session.SettingOut:           "OUT",
		session.SettingBlockMap:      "--bmap and --no-bmap",
		session.SettingSparse:        "--sparse and --bmap",
		session.SettingLabel:         "--label",
		session.SettingFS:            "--fs",
		session.SettingEraseUnit:     "--erase-unit",
		cardbench.SettingCompare:     "--compare",
		fakecheck.SettingDestructive: "--destructive",
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
	}
}

// flagOf is the command-line name of setting s, "" for one no flag gives.
func flagOf(s failure.Setting) string { return settingFlags()[s] }

// settingFlagError is a library's error about a setting, told in the words of
// the command line: the flag that gave the setting. It keeps the error's
// chain, for its kind's advice, and its class: a value the device gave
// for a setting (customize.DeviceValueError) stays a refusal.
type settingFlagError struct {
	msg string
	err error
}

func (e *settingFlagError) Error() string        { return e.msg }
func (e *settingFlagError) Unwrap() error        { return e.err }
func (e *settingFlagError) Class() failure.Class { return failure.Of(e.err) }

// inFlagWords is err told in the command line's words: the setting it is
// about ("transfer size: ...") named by its flag ("--transfer-size: ...");
// err itself when no flag gives its setting, or it is told so already.
func inFlagWords(err error) error {
	var se *failure.SettingError
	if !errors.As(err, &se) || flagOf(se.Setting) == "" || errors.As(err, new(*settingFlagError)) {
		return err
	}
	return &settingFlagError{msg: strings.Replace(err.Error(), se.Error(), flagOf(se.Setting)+": "+se.Err.Error(), 1), err: err}
}

// words are the command line's words the presenters say: its one table of
// flags, its advice for a reader's notice and for a disk in use, its exit
// codes.
func words() sessionview.Words {
	return sessionview.Words{Flag: flagOf, NoticeAdvice: noticeAdvice, InUseAdvice: inUseAdvice, Codes: classCodes(), Hint: hint}
}
