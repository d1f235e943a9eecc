package customize

import (
	"fmt"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
)

// Format is how an image applies first-boot settings: the init_format of
// Raspberry Pi Imager's manifests.
type Format string

// The formats.
const (
	FormatAuto         Format = "auto"
	FormatSystemd      Format = "systemd"       // firstrun.sh run by systemd.run (Raspberry Pi OS to Bookworm)
	FormatCloudInit    Format = "cloudinit"     // cloud-init's NoCloud seed (Ubuntu)
	FormatCloudInitRPi Format = "cloudinit-rpi" // the same on Raspberry Pi OS Trixie
	FormatPreseed      Format = "rpi-preseed"   // rpi-preseed.toml
)

// Formats are the formats that can be asked for, auto first.
func Formats() []Format {
	return []Format{FormatAuto, FormatSystemd, FormatCloudInit, FormatCloudInitRPi, FormatPreseed}
}

// FormatNames are the formats' names, auto first, joined with ", ".
func FormatNames() string {
	var names []string
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}

// ParseFormat is the format named s; empty is auto.
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return FormatAuto, nil
	}
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", &failure.SettingError{Setting: SettingInitFormat, Err: fmt.Errorf("%q: the formats are %s", s, FormatNames())}
}

func (f Format) cloud() bool { return f == FormatCloudInit || f == FormatCloudInitRPi }

// ErrUnrecognised is a boot partition whose files say nothing of how its
// system applies first-boot settings: writing it would customise nothing
// or the wrong thing, so nothing is written unless a format is given.
var ErrUnrecognised = failure.New(failure.Refused, "the boot partition does not say how its system applies first-boot settings")

// detect chooses the format from the names in the boot partition's root
// directory (lower case) and cmdline.txt, and says why.
func detect(names map[string]bool, cmdline string) (Format, string, error) {
	cloudSeed := ""
	for _, n := range []string{"user-data", "meta-data", "network-config"} {
		if names[n] {
			cloudSeed = n
			break
		}
	}
	rpiOS := names["issue.txt"] || strings.Contains(cmdline, "raspberrypi-sys-mods")
	switch {
	case names["rpi-preseed.toml"]:
		return FormatPreseed, "the boot partition holds rpi-preseed.toml", nil
	case cloudSeed != "" && rpiOS:
		return FormatCloudInitRPi, "the boot partition holds " + cloudSeed + " (a cloud-init seed) and is Raspberry Pi OS's (issue.txt or its cmdline.txt)", nil
	case cloudSeed != "":
		return FormatCloudInit, "the boot partition holds " + cloudSeed + " (a cloud-init seed)", nil
	case names["cmdline.txt"] && rpiOS:
		return FormatSystemd, "the boot partition is Raspberry Pi OS's (issue.txt or its cmdline.txt) with no cloud-init seed", nil
	}
	return "", "", ErrUnrecognised
}
