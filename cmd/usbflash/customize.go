package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/usbflash/usbflash/customize"
)

// customizeFlags are write's first-boot settings: a file, and the common
// ones as flags (passwords only in the file: a command line is seen by
// every user of the machine).
type customizeFlags struct {
	file, initFormat, hostname, user, wifiSSID, wifiCountry, timezone, keymap string
	sshKeys                                                                   []string
}

func (f *customizeFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.file, "customize", "", "first-boot settings for the card's system, a .toml or .yaml file (hostname, user, password, SSH, Wi-Fi, locale, config.txt lines, files, cloud-init files): written into its boot partition (see docs/usage.md)")
	fl.StringVar(&f.initFormat, "init-format", "", "how the image applies them: "+strings.Join(formatNames(), ", ")+" (default auto: from what its boot partition holds)")
	fl.StringVar(&f.hostname, "hostname", "", "the card's hostname; {n} is its number in the run, {usb_serial} and {card_serial} its reader's and its own serial")
	fl.StringVar(&f.user, "user", "", "rename the image's first user to this")
	fl.StringSliceVar(&f.sshKeys, "ssh-key", nil, "enable SSH with this public key (or the keys of this .pub file); repeatable")
	fl.StringVar(&f.wifiSSID, "wifi-ssid", "", "join this Wi-Fi network (its password in --customize's file)")
	fl.StringVar(&f.wifiCountry, "wifi-country", "", "the Wi-Fi regulatory country (GB, US, DE...)")
	fl.StringVar(&f.timezone, "timezone", "", "the system's time zone (Europe/London)")
	fl.StringVar(&f.keymap, "keymap", "", "the console and X keyboard layout (gb, us, de...)")
}

func formatNames() []string {
	var names []string
	for _, f := range customize.Formats() {
		names = append(names, string(f))
	}
	return names
}

// config is the customisation asked for, nil when none: the file's
// settings with the flags' over them.
func (f *customizeFlags) config() (*customize.Config, error) {
	var c customize.Config
	if f.file != "" {
		var err error
		if c, err = customize.Load(f.file); err != nil {
			return nil, err
		}
	}
	flags := customize.Config{Hostname: f.hostname, User: f.user, InitFormat: f.initFormat, Timezone: f.timezone, Keymap: f.keymap,
		WiFi: customize.WiFi{SSID: f.wifiSSID, Country: f.wifiCountry}}
	for _, k := range f.sshKeys {
		keys, err := customize.ReadKeys(k)
		if err != nil {
			return nil, err
		}
		flags.SSHKeys = append(flags.SSHKeys, keys...)
	}
	c = c.Merge(flags)
	if c.Empty() {
		if f.initFormat != "" {
			return nil, &usageError{"--init-format says how to customise: add --customize or a setting (--hostname, ...)"}
		}
		return nil, nil
	}
	return &c, nil
}
