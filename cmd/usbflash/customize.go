package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/sessionview"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/pipeline"
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
	fl.StringVar(&f.initFormat, "init-format", "", "how the image applies them: "+customize.FormatNames()+" (default auto: from what its boot partition holds)")
	fl.StringVar(&f.hostname, "hostname", "", "the card's hostname; {n} is its number in the run, {usb_serial} and {card_serial} its reader's and its own serial")
	fl.StringVar(&f.user, "user", "", "rename the image's first user to this")
	// An array, not a slice: a key's comment may hold a comma, and a
	// slice's CSV parsing would split it (or drop what follows a line
	// break).
	fl.StringArrayVar(&f.sshKeys, "ssh-key", nil, "enable SSH with this public key (or the keys of this .pub file); repeatable")
	fl.StringVar(&f.wifiSSID, "wifi-ssid", "", "join this Wi-Fi network (its password in --customize's file)")
	fl.StringVar(&f.wifiCountry, "wifi-country", "", "the Wi-Fi regulatory country (GB, US, DE...)")
	fl.StringVar(&f.timezone, "timezone", "", "the system's time zone (Europe/London)")
	fl.StringVar(&f.keymap, "keymap", "", "the console and X keyboard layout (gb, us, de...)")
}

// config is the customisation asked for, nil when none: the file's
// settings (or base's, given whole: the page's) with the flags' over them.
func (f *customizeFlags) config(base *customize.Config) (*customize.Config, error) {
	c, err := customize.Compose(base, f.file, customize.Config{Hostname: f.hostname, User: f.user, InitFormat: f.initFormat,
		Timezone: f.timezone, Keymap: f.keymap, WiFi: customize.WiFi{SSID: f.wifiSSID, Country: f.wifiCountry}}, f.sshKeys)
	switch {
	case err != nil:
		return nil, err
	case !c.Empty():
		return &c, nil
	case f.initFormat != "":
		return nil, &usageError{"--init-format says how to customise: add --customize or a setting (--hostname, ...)"}
	}
	return nil, nil
}

// newCustomizeCommand is `usbflash customize`: write's first-boot
// settings into cards already written, or image files, in place
// (flash.Customize).
// customizeOptions is what a customize command line asks for: its
// session's Config (but its Observer and Confirm, which the run adds) and
// the targets.
type customizeOptions struct {
	Config  session.CustomizeConfig
	Targets []drive.Spec
	Yes     bool
}

func newCustomizeCommand(a *app, runF func(*customizeOptions) error) *cobra.Command {
	var (
		custom       customizeFlags
		force, yes   bool
		transferSize string
	)
	c := &cobra.Command{
		Use:   "customize TARGET...",
		Short: "Write first-boot settings into a written card's (or an image file's) boot partition",
		Long: `Write the first-boot settings write --customize writes (hostname, user, SSH,
Wi-Fi, locale, cloud-init: the same flags) into the boot partition of each
TARGET, a card already written or an image file (file:PATH), through
usbflash's own block devices, never a mount.

Everything is read and decided before the first byte is written. The
card's first transfer (its partition table) is zeroed first and written
back last, each step synced, so an interrupted customisation leaves a card
that boots nothing rather than half customised; the bytes it held and
those it is to hold are kept in two files until it is read back the same,
and the error names them: usbflash restore puts either back.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{"customize needs a TARGET; see 'usbflash customize --help'"}
			}
			return nil
		},
		ValidArgsFunction: targetArgs(false),
		RunE: func(c *cobra.Command, args []string) error {
			transfer, err := transferFlag(c, transferSize)
			if err != nil {
				return err
			}
			cfg, err := custom.config(nil)
			if err != nil {
				return err
			}
			if cfg == nil {
				return &usageError{"say what to write: --customize FILE or a setting (--hostname, --user, --ssh-key, ...)"}
			}
			o := &customizeOptions{Yes: yes, Targets: make([]drive.Spec, len(args)),
				Config: session.CustomizeConfig{Customize: *cfg, TransferSize: transfer, Force: force}}
			for i, arg := range args {
				if o.Targets[i], err = drive.Parse(arg); err != nil {
					return err
				}
			}
			if o.Config.Readers, err = a.newReaders(); err != nil {
				return err
			}
			return runOr(c.Context(), runF, o, a.customizeRun)
		},
	}
	addTransferFlag(c, &transferSize, pipeline.DefaultTransferSize, "the first transfer, held back and written last as write holds it, and the read-back's READ size")
	c.Flags().BoolVar(&force, "force", false, "customise even though the target's disk is mounted")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (required without a terminal)")
	custom.register(c.Flags())
	return c
}

// customizeRun customises each target in place and says what it did.
func (a *app) customizeRun(ctx context.Context, o *customizeOptions) error {
	return a.reported(false, false, func(rep termui.Reporter) error {
		cfg := o.Config
		w := words()
		cfg.Observer = session.ObserverFunc(func(e session.Event) { sessionview.Card(rep, w, e) })
		if !o.Yes {
			cfg.Confirm = func(d *drive.Device) error {
				return a.confirmOverwrite([]*drive.Device{d}, "first-boot settings, into its boot partition")
			}
		}
		_, err := session.Customize(ctx, cfg, o.Targets)
		return err
	})
}
