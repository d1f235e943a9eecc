package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/cardfs"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/pipeline"
)

// options runs a command line through a root over the command newCmd
// makes, its run replaced: the Options the line makes (nil when it is
// refused), and how it ended. Nothing is opened: what the flags alone
// refuse is refused here.
func options[O any](t *testing.T, newCmd func(*app, func(*O) error) *cobra.Command, args ...string) (*O, result) {
	t.Helper()
	var got *O
	var out, errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	code := execute(context.Background(), a, newRoot(a, newCmd(a, func(o *O) error { got = o; return nil })), args)
	if (got != nil) != (code == exitOK) {
		t.Fatalf("%q: exit %d, Options %v", args, code, got != nil)
	}
	return got, result{code, out.String(), errOut.String()}
}

// flagCase is a command line, and the Options it makes (check says they
// are the ones asked for) or the usage error it is refused with (refuse).
type flagCase[O any] struct {
	args   []string
	refuse string
	check  func(o *O) bool
}

// holdFlags holds each command line of cases to its Options or refusal.
func holdFlags[O any](t *testing.T, newCmd func(*app, func(*O) error) *cobra.Command, cases ...flagCase[O]) {
	t.Helper()
	for _, tc := range cases {
		o, r := options(t, newCmd, tc.args...)
		switch {
		case tc.refuse != "" && (r.code != exitUsage || !strings.Contains(r.stderr, tc.refuse)):
			t.Errorf("%q: exit %d, %q; want a usage error saying %q", tc.args, r.code, r.stderr, tc.refuse)
		case tc.refuse == "" && (o == nil || !tc.check(o)):
			t.Errorf("%q: exit %d, %s: Options %+v", tc.args, r.code, r.stderr, o)
		}
	}
}

// TestFlags: the Options each command line makes, and what its flags
// alone refuse (a usage error, exit 2, before anything is opened: no card
// file is made); what the sessions do with the Options is theirs.
func TestFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	card := func(name string) string { return "sim:" + filepath.Join(dir, name) + "?size=64MiB" }
	ssh := filepath.Join(dir, "id.pub")
	if err := os.WriteFile(ssh, []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq8MG/N4le2dfNS0JOAMmvgJDtUxi25HmT+0oiEJQjj maker@laptop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Nothing is opened: no card file is made.
	t.Cleanup(func() {
		if entries, _ := os.ReadDir(dir); len(entries) != 2 {
			t.Errorf("%d files in %s, want the key and the customisation file", len(entries), dir)
		}
	})
	t.Run("write", func(t *testing.T) {
		t.Parallel()
		w := func(args ...string) []string { return append([]string{"write"}, args...) }
		holdFlags(t, newWriteCommand,
			flagCase[writeOptions]{args: w("os.img", card("a"), card("b")), check: func(o *writeOptions) bool {
				c := o.Config
				e := c.Engine
				return c.Image.Path == "os.img" && len(o.Targets) == 2 && o.Targets[1].Raw == card("b") && e.TransferSize == 0 && e.Buffers == 0 &&
					e.Verify && e.VerifyMethod == pipeline.MethodDigests && e.Lag == 8 && !o.Yes && !c.Targets.Force && c.Targets.Readers != nil &&
					c.Targets.Readers.Sim == nil && c.Output.ExitCodes[failure.Refused] == exitRefused && c.Targets.Check == nil && c.Customize == nil
			}},
			flagCase[writeOptions]{args: w("--yes", "--transfer-size", "4MiB", "--buffers", "3", "--lag", "2", "--eject", "--force", "--skip-refused",
				"--verify-hash", "sha256", "--repair", "--check", "--max-cache", "0", "os.img.xz", card("a")), check: func(o *writeOptions) bool {
				c := o.Config
				e, ts := c.Engine, c.Targets
				return o.Yes && e.TransferSize == 4<<20 && e.Buffers == 3 && e.Lag == 2 && ts.Eject && ts.Force && ts.SkipRefused &&
					e.VerifyMethod == pipeline.MethodSHA256 && e.Repair && ts.Check != nil && ts.Check.MaxCache == -1
			}},
			flagCase[writeOptions]{args: w("--no-verify", "--bmap", "os.bmap", "--sha256", strings.Repeat("ab", 32), "--sha256-keyring", "k.gpg",
				"--sha256-fingerprint", "F00D", "--cache", "c", "--cache-size", "1GiB", "os.img", card("a")), check: func(o *writeOptions) bool {
				c := o.Config
				i := c.Image
				return !c.Engine.Verify && c.Engine.BlockMap.Path == "os.bmap" && i.SHA256 == strings.Repeat("ab", 32) && i.SHA256Keyring == "k.gpg" &&
					i.SHA256Fingerprint == "F00D" && i.Cache == "c" && i.CacheMax == 1<<30
			}},
			flagCase[writeOptions]{args: w("--catalog", "list.json", "--os", "Lite", card("a")), check: func(o *writeOptions) bool {
				i := o.Config.Image
				return i.Path == "" && i.OS == "Lite" && i.Catalog == "list.json" && len(o.Targets) == 1
			}},
			flagCase[writeOptions]{args: w("--watch", "--yes", "--report", filepath.Join(dir, "r.csv"), "--stop-timeout", "10m", "--log-dir", "logs",
				"--station", "line 3", "--operator", "ana", "--metrics-listen", ":9123", "os.img"), check: func(o *writeOptions) bool {
				c := o.Config
				return o.Watch && o.Report == filepath.Join(dir, "r.csv") && o.StopTimeout == 10*time.Minute && o.LogDir == "logs" &&
					c.Output.Station == "line 3" && c.Output.Operator == "ana" && o.Metrics.Listen == ":9123" && o.Metrics.Station == "line 3" && len(o.Targets) == 0
			}},
			flagCase[writeOptions]{args: w("--all", "--yes", "os.img"), check: func(o *writeOptions) bool { return o.All && len(o.Targets) == 0 }},
			flagCase[writeOptions]{args: w("--yes", "--hostname", "pi-{n}", "--user", "maker", "--ssh-key", ssh, "--wifi-ssid", "Shop", "--wifi-country", "GB",
				"--timezone", "Europe/London", "--keymap", "gb", "--init-format", "systemd", "os.img", card("a")), check: func(o *writeOptions) bool {
				c := o.Config.Customize
				return c != nil && c.Hostname == "pi-{n}" && c.User == "maker" && len(c.SSHKeys) == 1 && c.WiFi.SSID == "Shop" &&
					c.WiFi.Country == "GB" && c.Timezone == "Europe/London" && c.Keymap == "gb" && c.InitFormat == "systemd"
			}},
			flagCase[writeOptions]{args: w("--quirks", "07c4:a4a5:r", "--transport", "uas", "--queue-depth", "4", "--readers", "sim:"+dir, "os.img", "0"),
				check: func(o *writeOptions) bool {
					r := o.Config.Targets.Readers
					return r.Quirks.Setting == "07c4:a4a5:r" && r.Transport == "uas" && r.QueueDepth == 4 && r.Sim != nil && r.Sim.Dir == dir &&
						o.Targets[0].Raw == "0"
				}},
			flagCase[writeOptions]{args: w("--watch", "os.img"), refuse: "--watch writes every card that appears without asking: add --yes"},
			flagCase[writeOptions]{args: w("os.img", card("a"), card("a")), refuse: "is given twice"},
			flagCase[writeOptions]{args: w("os.img"), refuse: "write needs IMAGE and at least one TARGET"},
			flagCase[writeOptions]{args: w("--all", "os.img", card("a")), refuse: "write --all and --watch take only the IMAGE"},
			flagCase[writeOptions]{args: w("--all", "--watch", "--yes", "os.img"), refuse: "give one"},
			flagCase[writeOptions]{args: w("--report", filepath.Join(dir, "r.txt"), "os.img", card("a")), refuse: "a report is a .json or .csv file"},
			flagCase[writeOptions]{args: w("--report", filepath.Join(dir, "none", "r.json"), "os.img", card("a")), refuse: "report " + filepath.Join(dir, "none", "r.json")},
			flagCase[writeOptions]{args: w("--stop-timeout", "1m", "os.img", card("a")), refuse: "add --watch"},
			flagCase[writeOptions]{args: w("--no-verify", "--repair", "os.img", card("a")), refuse: "--repair has nothing to repair"},
			flagCase[writeOptions]{args: w("--init-format", "systemd", "os.img", card("a")), refuse: "--init-format says how to customise"},
			flagCase[writeOptions]{args: w("--queue-depth", "0", "os.img", card("a")), refuse: "--queue-depth: 0 is fewer than 1"},
			flagCase[writeOptions]{args: w("--readers", "scsi:x", "os.img", card("a")), refuse: "--readers: "},
			flagCase[writeOptions]{args: w("--cache-size", "lots", "os.img", card("a")), refuse: "--cache-size: "},
			flagCase[writeOptions]{args: w("--ca-cert", filepath.Join(dir, "none.pem"), "os.img", card("a")), refuse: "--ca-cert: "},
		)
	})
	t.Run("customisation values", func(t *testing.T) {
		t.Parallel()
		// A value that breaks its kind's rule is refused naming the flag
		// (or the file and its key), the value (its control characters
		// escaped) and the rule, for write and customize alike.
		hostile := []string{"$(touch /tmp/PWNED)", "`reboot`", "it's", `"q"`, "a\nb", "a;b", "{a: b}", "[x]", "k: v", "#c", "a\x1b[2Jb", strings.Repeat("a", 70)}
		rules := map[string]string{
			"--hostname": "RFC 1123", "--user": "useradd", "--timezone": "IANA time zone", "--keymap": "XKB keyboard layout",
			"--wifi-country": "ISO 3166-1 alpha-2", "--ssh-key": "SSH public key",
		}
		file := filepath.Join(dir, "pi.toml")
		if err := os.WriteFile(file, []byte("hostname = \"pi; reboot\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		type value struct {
			args       []string
			want, rule string // the error's start, after "usbflash: "; words of its rule
		}
		var values []value
		for flag, rule := range rules {
			for _, v := range hostile {
				if flag == "--ssh-key" {
					v = "ssh-ed25519 " + v
				}
				values = append(values, value{[]string{flag, v}, flag + ": " + strconv.Quote(v)[:min(len(v), 20)], rule})
			}
		}
		values = append(values,
			value{[]string{"--wifi-ssid", "net\x1b[2J"}, `--wifi-ssid: "net\x1b[2J" breaks the rule: `, "SSID"},
			value{[]string{"--wifi-ssid", strings.Repeat("s", 33)}, "--wifi-ssid: ", "1 to 32 bytes"},
			value{[]string{"--customize", file}, "--customize: " + file + `: hostname "pi; reboot" breaks the rule: `, "RFC 1123"})
		for _, v := range values {
			_, w := options(t, newWriteCommand, append([]string{"write", "--yes", "os.img.xz", card("c")}, v.args...)...)
			_, c := options(t, newCustomizeCommand, append([]string{"customize", "--yes", card("c")}, v.args...)...)
			for _, r := range []result{w, c} {
				if r.code != exitUsage || !strings.HasPrefix(r.stderr, "usbflash: "+v.want) || !strings.Contains(r.stderr, v.rule) {
					t.Errorf("%q: exit %d\n%s\nwant usbflash: %s...%s", v.args, r.code, r.stderr, v.want, v.rule)
				}
				if strings.ContainsAny(strings.TrimSuffix(r.stderr, "\n"), "\x1b\r") || strings.Count(r.stderr, "\n") > 2 {
					t.Errorf("%q: %q is not one fact", v.args, r.stderr)
				}
			}
		}
	})
	t.Run("bench", func(t *testing.T) {
		t.Parallel()
		b := func(args ...string) []string { return append([]string{"bench"}, args...) }
		holdFlags(t, newBenchCommand,
			flagCase[benchOptions]{args: b(card("b")), check: func(o *benchOptions) bool {
				c := o.Config
				return c.Target.Raw == card("b") && !c.Write && c.Plan.Region == nil && c.Plan.Sizes == nil && c.PointTime == 250*time.Millisecond &&
					c.RandomTime == time.Second && c.Compare == "" && c.Readers != nil && !o.JSON && o.Plot == ""
			}},
			flagCase[benchOptions]{args: b("--write", "--preserve", "--yes", "--region", "1GiB:64MiB", "--sizes", "64KiB, 1MiB", "--time", "20ms", "--random-time", "30ms",
				"--skip", "align,random", "--force", "--json", "-q", "--plot", filepath.Join(dir, "b.svg"), card("b")), check: func(o *benchOptions) bool {
				c := o.Config
				return c.Write && c.Plan.Preserve && o.Yes && *c.Plan.Region == cardbench.Region{Name: "region", Offset: 1 << 30, Length: 64 << 20} &&
					len(c.Plan.Sizes) == 2 && c.Plan.Sizes[1] == 1<<20 && c.PointTime == 20*time.Millisecond && c.RandomTime == 30*time.Millisecond &&
					c.Skip.Align && c.Skip.Random && !c.Skip.RoundTrip && c.Force && o.JSON && o.Quiet && o.Plot == filepath.Join(dir, "b.svg")
			}},
			flagCase[benchOptions]{args: b("--compare", card("b")), check: func(o *benchOptions) bool { return o.Config.Compare == cardbench.CompareReaderDisk }},
			flagCase[benchOptions]{args: b("--compare", "file:/dev/sdb", card("b")), check: func(o *benchOptions) bool {
				return o.Config.Compare == "/dev/sdb" && o.Config.Target.Raw == card("b")
			}},
			flagCase[benchOptions]{args: b("--compare=file:/dev/sdb", card("b")), check: func(o *benchOptions) bool { return o.Config.Compare == "/dev/sdb" }},
			flagCase[benchOptions]{args: b("--write", "--yes", card("b")), refuse: "--write needs --region OFFSET:LENGTH"},
			flagCase[benchOptions]{args: b("--preserve", card("b")), refuse: "--preserve goes with --write"},
			flagCase[benchOptions]{args: b("--region", "1GiB", card("b")), refuse: `--region "1GiB": want OFFSET:LENGTH`},
			flagCase[benchOptions]{args: b("--sizes", "64KiB,fast", card("b")), refuse: `--sizes: "fast" is not a size`},
			flagCase[benchOptions]{args: b("--sizes", "64KiB,64GiB", card("b")), refuse: "--sizes: transfer size 64 GiB is more than the 1 GiB one transfer may hold in memory"},
			flagCase[benchOptions]{args: b("--write", "--preserve", "--yes", "--region", "0:600MiB", card("b")), refuse: "a region of 600 MiB cannot be preserved"},
			flagCase[benchOptions]{args: b("--time", "0s", card("b")), refuse: "--time and --random-time must be positive"},
			flagCase[benchOptions]{args: b("--plot", "x.pdf", card("b")), refuse: "the file must end in .svg or .png"},
			flagCase[benchOptions]{args: b("--plot", "/nonexistent/bench.svg", card("b")), refuse: "--plot: cannot create /nonexistent/bench.svg"},
			flagCase[benchOptions]{args: b("--skip", "sweep", card("b")), refuse: "--skip sweep: want align, random or roundtrip"},
			flagCase[benchOptions]{args: b("--compare=/dev/sdb", card("b")), refuse: "--compare=/dev/sdb: want file:/dev/sdX"},
			flagCase[benchOptions]{args: b("--compare=file:", card("b")), refuse: "--compare=file: needs a path"},
			flagCase[benchOptions]{args: b("--compare", "sim:other.img", card("b")), refuse: "bench takes one TARGET"},
			flagCase[benchOptions]{args: b("file:other.img", card("b")), refuse: "bench needs TARGET, got 2 arguments"},
		)
	})
	t.Run("erase and format", func(t *testing.T) {
		t.Parallel()
		// Their blocks (session.Blocks), written by write's run with
		// write's flags for the targets, the question and the transfers.
		erase := func(o *writeOptions) *session.Erase { e, _ := o.Config.Blocks.(*session.Erase); return e }
		format := func(o *writeOptions) *session.Format { f, _ := o.Config.Blocks.(*session.Format); return f }
		holdFlags(t, newEraseCommand,
			flagCase[writeOptions]{args: []string{"erase", card("e"), card("f")}, check: func(o *writeOptions) bool {
				c := o.Config
				e := erase(o)
				return e != nil && !e.Random && !e.NoUnmap && o.Command == jsonevents.CommandErase && o.Asks == "zeros over every block" &&
					c.Image.Path == "" && c.Image.OS == "" && len(o.Targets) == 2 && o.Targets[1].Raw == card("f") && c.Engine.Verify && c.Engine.TransferSize == 0 &&
					!o.Yes && c.Targets.Readers != nil && c.Output.ExitCodes[failure.Refused] == exitRefused
			}},
			flagCase[writeOptions]{args: []string{"erase", "--yes", "--random", "--no-unmap", "--no-verify", "--transfer-size", "1MiB", "--buffers", "3",
				"--eject", "--force", "--skip-refused", "--json", "-q", card("e")}, check: func(o *writeOptions) bool {
				c := o.Config
				e := erase(o)
				return e != nil && e.Random && e.NoUnmap && o.Asks == "a random pattern over every block" && o.Yes && !c.Engine.Verify &&
					c.Engine.TransferSize == 1<<20 && c.Engine.Buffers == 3 && c.Targets.Eject && c.Targets.Force && c.Targets.SkipRefused && o.JSON && o.Quiet
			}},
			flagCase[writeOptions]{args: []string{"erase", "--watch", "--yes", "--report", filepath.Join(dir, "e.json"), "--stop-timeout", "1m"},
				check: func(o *writeOptions) bool {
					return o.Watch && o.Report == filepath.Join(dir, "e.json") && o.StopTimeout == time.Minute && len(o.Targets) == 0
				}},
			flagCase[writeOptions]{args: []string{"erase", "--all", "--yes"}, check: func(o *writeOptions) bool { return o.All && len(o.Targets) == 0 }},
			flagCase[writeOptions]{args: []string{"erase", "--yes"}, refuse: "erase needs at least one TARGET"},
			flagCase[writeOptions]{args: []string{"erase", "--all", card("e")}, refuse: "erase --all and --watch find the readers themselves: give no TARGET"},
			flagCase[writeOptions]{args: []string{"erase", "--all", "--watch", "--yes"}, refuse: "give one"},
			flagCase[writeOptions]{args: []string{"erase", "--watch"}, refuse: "add --yes"},
			flagCase[writeOptions]{args: []string{"erase", "--stop-timeout", "1m", card("e")}, refuse: "add --watch"},
			flagCase[writeOptions]{args: []string{"erase", card("e"), card("e")}, refuse: "is given twice"},
			flagCase[writeOptions]{args: []string{"erase", "--report", filepath.Join(dir, "none", "e.json"), card("e"), card("f")},
				refuse: "report " + filepath.Join(dir, "none", "e.json")},
			flagCase[writeOptions]{args: []string{"erase", "--transfer-size", "0", card("e")}, refuse: "--transfer-size 0"},
		)
		holdFlags(t, newFormatCommand,
			flagCase[writeOptions]{args: []string{"format", "--yes", "--label", "pics", "--fs", "exfat", "--erase-unit", "8MiB", card("g")},
				check: func(o *writeOptions) bool {
					f := format(o)
					return f != nil && f.Label == "pics" && f.FS == cardfs.ExFAT && f.EraseUnit == 8<<20 && !f.Measure && o.Command == jsonevents.CommandFormat &&
						o.Asks == `a new file system labelled "pics"` && o.Yes && o.Config.Engine.Verify && len(o.Targets) == 1
				}},
			flagCase[writeOptions]{args: []string{"format", "--erase-unit", "measure", card("g")}, check: func(o *writeOptions) bool {
				f := format(o)
				return f != nil && f.Measure && f.EraseUnit == 0 && f.FS == "" && o.Asks == "a new file system"
			}},
			flagCase[writeOptions]{args: []string{"format"}, refuse: "format needs at least one TARGET"},
			flagCase[writeOptions]{args: []string{"format", "--label", "TWELVE CHARS", card("g")}, refuse: "--label: "},
			flagCase[writeOptions]{args: []string{"format", "--erase-unit", "3MiB", card("g")}, refuse: "--erase-unit: 3145728 bytes is not a power of two"},
			flagCase[writeOptions]{args: []string{"format", "--erase-unit", "lots", card("g")}, refuse: "--erase-unit: "},
			flagCase[writeOptions]{args: []string{"format", "--fs", "ntfs", card("g")}, refuse: "--fs: "},
		)
	})
	t.Run("the other commands", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(dir, "b.img.zst")
		holdFlags(t, newVerifyCommand,
			flagCase[verifyOptions]{args: []string{"verify", "--transfer-size", "512KiB", "--bmap", "m.bmap", "--no-bmap", "--repair", "--sha256", "ab",
				"--cache", "c", "--json", "os.img", card("v")}, check: func(o *verifyOptions) bool {
				c := o.Config
				return c.Image.Path == "os.img" && o.Target.Raw == card("v") && c.TransferSize == 512<<10 && c.BlockMap.Path == "m.bmap" && c.BlockMap.Off &&
					c.Repair && c.Image.SHA256 == "ab" && c.Image.Cache == "c" && c.Readers != nil && o.JSON
			}},
			flagCase[verifyOptions]{args: []string{"verify", "--catalog", "l.json", "--os", "Lite", card("v")}, check: func(o *verifyOptions) bool {
				return o.Config.Image.Path == "" && o.Config.Image.OS == "Lite" && o.Target.Raw == card("v")
			}},
			flagCase[verifyOptions]{args: []string{"verify", "--os", "Lite", "os.img", card("v")}, refuse: "verify needs TARGET (the IMAGE is --os's), got 2 arguments"},
		)
		holdFlags(t, newReadCommand,
			flagCase[readOptions]{args: []string{"read", "--size", "4GiB", "--verify", "--force", "--buffers", "3", "--transfer-size", "1MiB", "-q", card("r"), out},
				check: func(o *readOptions) bool {
					c := o.Config
					return o.Target.Raw == card("r") && c.Out == out && c.Size == 4<<30 && c.Verify && c.Force && c.Buffers == 3 &&
						c.TransferSize == 1<<20 && !c.Used && o.Quiet
				}},
			flagCase[readOptions]{args: []string{"read", "--used", card("r"), out}, check: func(o *readOptions) bool {
				return o.Config.Used && o.Config.Size == 0 && o.Config.TransferSize == 0
			}},
			flagCase[readOptions]{args: []string{"read", "--size", "1MiB", "--used", card("r"), out}, refuse: "--size and --used both say where to stop: pass one"},
			flagCase[readOptions]{args: []string{"read", "--size", "0", card("r"), out}, refuse: `--size "0": want a positive size such as 4GiB`},
		)
		holdFlags(t, newCheckCommand,
			flagCase[checkOptions]{args: []string{"check", "--destructive", "--yes", "--force", "--max-cache", "4MiB", "--json", card("k")},
				check: func(o *checkOptions) bool {
					c := o.Config
					return c.Target.Raw == card("k") && c.Destructive && o.Yes && c.Force && c.MaxCache == 4<<20 && c.Readers != nil && o.JSON
				}},
			flagCase[checkOptions]{args: []string{"check", "--max-cache", "0", card("k")}, check: func(o *checkOptions) bool { return o.Config.MaxCache == -1 && !o.Yes }},
		)
		holdFlags(t, newCustomizeCommand,
			flagCase[customizeOptions]{args: []string{"customize", "--yes", "--hostname", "kiosk", "--transfer-size", "128KiB", "--force", card("c"), "file:" + out},
				check: func(o *customizeOptions) bool {
					c := o.Config
					return o.Yes && c.Customize.Hostname == "kiosk" && c.TransferSize == 128<<10 && c.Force && len(o.Targets) == 2 &&
						o.Targets[1].Scheme == drive.File && c.Readers != nil
				}},
			flagCase[customizeOptions]{args: []string{"customize", card("c")}, refuse: "say what to write: --customize FILE or a setting"},
			flagCase[customizeOptions]{args: []string{"customize"}, refuse: "customize needs a TARGET"},
		)
		holdFlags(t, newRestoreCommand, flagCase[restoreOptions]{args: []string{"restore", "--force", "c.regions", card("c")}, check: func(o *restoreOptions) bool {
			return o.Config.List == "c.regions" && o.Config.Target.Raw == card("c") && o.Config.Force && o.Config.Readers != nil
		}})
		holdFlags(t, newImagesCommand,
			flagCase[imagesOptions]{args: []string{"images", "--json", "--catalog", "l.json"}, check: func(o *imagesOptions) bool { return o.Catalog == "l.json" && o.JSON }},
			flagCase[imagesOptions]{args: []string{"images", "--catalog", ""}, refuse: "images needs an OS list"},
		)
		holdFlags(t, newInfoCommand, flagCase[infoOptions]{args: []string{"info", "--json", "--transport", "bot", card("i")}, check: func(o *infoOptions) bool {
			return o.Target.Raw == card("i") && o.JSON && o.Readers.Transport == "bot"
		}})
		holdFlags(t, newServeCommand,
			flagCase[serveOptions]{args: []string{"serve", "--listen", ":8080", "--open", "--report", "r.csv", "--station", "line 3", "--stop-timeout", "1m",
				"--verify-hash", "sha256", "--readers", "sim:" + dir}, check: func(o *serveOptions) bool {
				return o.listen == ":8080" && o.open && o.report == "r.csv" && o.station == "line 3" && o.stopTimeout == time.Minute &&
					o.verifyHash == "sha256" && o.Readers.Sim != nil && o.Readers.Sim.Dir == dir
			}},
			flagCase[serveOptions]{args: []string{"serve", "--queue-depth", "0"}, refuse: "--queue-depth: 0 is fewer than 1"},
			flagCase[serveOptions]{args: []string{"serve", "sim:a"}, refuse: "serve needs no arguments"},
		)
		holdFlags(t, newListCommand, flagCase[listOptions]{args: []string{"list", "--readers", "sim:" + dir}, check: func(o *listOptions) bool {
			return o.Readers.Sim != nil && !o.JSON
		}})
	})
}
