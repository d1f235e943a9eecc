package customize

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/parttable"
)

// Options are what Apply takes besides the Config.
type Options struct {
	// Rand gives password salts; crypto/rand when nil.
	Rand io.Reader
	// Now stamps cloud-init's instance-id; time.Now when nil.
	Now func() time.Time
	// Card tells the cards of one run apart in their instance-ids.
	Card int
}

// File is one file Apply wrote: its name in the boot partition, its size
// and its SHA-256 (what a report may show: never its text, which can hold
// secrets).
type File struct {
	Name   string
	Size   int
	SHA256 string
}

// Result is what Apply did.
type Result struct {
	Format Format // the format written
	Why    string // why auto chose it; empty when it was given
	FAT    string // FAT12, FAT16 or FAT32: the boot partition's
	Files  []File // in the order written
	// Where says where the system reads the settings when that is not
	// the boot partition: a CIDATA partition added for cloud-init.
	Where string
	// Needs is the disk size the customisation takes, past the image's
	// own partitions (a CIDATA partition after them); 0: none.
	Needs int64
}

// Fits refuses a disk of capacity bytes that is too small for the
// customisation (a CIDATA partition after the image's last): checked for
// each card before its first byte.
func (r Result) Fits(capacity int64) error {
	return cidataPlace{needs: r.Needs}.fits(capacity)
}

// cmdline.txt entries that Apply adds, found again so that a card
// customised twice carries them once.
var (
	systemdRun   = " systemd.run=/boot/firstrun.sh systemd.run_success_action=reboot systemd.unit=kernel-command-line.target"
	earlierAdded = regexp.MustCompile(` systemd\.run=/boot/firstrun\.sh systemd\.run_success_action=reboot systemd\.unit=kernel-command-line\.target| ds=nocloud;i=\S+`)
)

// ErrNoCmdline is a systemd format asked of a boot partition without
// cmdline.txt: the script could not be started.
var ErrNoCmdline = failure.New(failure.Refused, "the boot partition has no cmdline.txt to start firstrun.sh from")

// ErrReadBack is a file that reads back from the boot partition other
// than it was written.
var ErrReadBack = errors.New("a file written into the boot partition reads back different")

// ErrNoFAT is a disk none of whose partitions holds a FAT file system:
// there is no boot partition to write first-boot settings into.
var ErrNoFAT = failure.New(failure.Refused, "no partition holds a FAT file system to write first-boot settings into")

// planned is what plan found: the boot partition, the format, cmdline.txt,
// and where a cloud-init seed goes when not into the boot partition.
type planned struct {
	fat        *bootFS
	part       parttable.Partition
	res        Result
	cmdline    []byte
	hasCmdline bool
	cidata     *cidataPlace // a CIDATA partition to add for the seed; nil: the seed goes into fat
}

// bootPartition is the disk's boot partition: the first, in its table's
// order, of a FAT's type that holds a FAT file system (a Raspberry Pi
// image's first; a cloud image's EFI System Partition, after its root).
func bootPartition(v Volume, blockSize int) (parttable.Partition, *bootFS, error) {
	parts, err := parttable.List(func(off int64, b []byte) error {
		_, err := v.ReadAt(b, off)
		return err
	}, blockSize, v.Size())
	if err != nil {
		return parttable.Partition{}, nil, failure.Wrap(failure.Refused, fmt.Errorf("finding the boot partition: %w", err))
	}
	if len(parts) == 0 {
		return parttable.Partition{}, nil, failure.Wrap(failure.Refused, fmt.Errorf("finding the boot partition: %w", parttable.ErrNoPartition))
	}
	var seen []string
	for _, part := range parts {
		seen = append(seen, fmt.Sprintf("%d (%s)", part.Number, part.Type()))
		if !part.MayBeFAT() {
			continue
		}
		fat, err := openFAT(v, part.Start, part.Size)
		if errors.Is(err, ErrNotFAT) {
			continue
		}
		return part, fat, err
	}
	return parttable.Partition{}, nil, fmt.Errorf("%w: partitions %s", ErrNoFAT, strings.Join(seen, ", "))
}

// plan opens the boot partition and decides the format, and refuses what
// cannot be written, all before anything is.
func plan(v Volume, blockSize int, c *Config) (planned, error) {
	var p planned
	if err := c.Check(); err != nil {
		return p, err
	}
	format, _ := ParseFormat(c.InitFormat)
	part, fat, err := bootPartition(v, blockSize)
	if err != nil {
		return p, err
	}
	p.fat, p.part, p.res.FAT = fat, part, fat.kind
	list, err := fat.names()
	if err != nil {
		return p, fmt.Errorf("reading the boot partition's root directory: %w", err)
	}
	names := map[string]bool{}
	for _, n := range list {
		names[strings.ToLower(n)] = true
	}
	if p.cmdline, p.hasCmdline, err = fat.readFile("cmdline.txt"); err != nil {
		return p, fmt.Errorf("reading cmdline.txt: %w", err)
	}
	if format == FormatAuto {
		f, why, err := detect(names, string(p.cmdline))
		if err != nil {
			return p, err
		}
		format, p.res.Why = f, why
	}
	p.res.Format = format
	if c.FirstRun != "" && format != FormatSystemd {
		return p, &failure.SettingError{Setting: SettingFile, Err: fmt.Errorf("a first-run script is for the systemd format, not %s", format)}
	}
	if (c.UserData != "" || c.NetworkConfig != "") && !format.cloud() {
		return p, &failure.SettingError{Setting: SettingFile, Err: fmt.Errorf("cloud-init files are for the cloudinit formats, not %s", format)}
	}
	if format == FormatSystemd && !p.hasCmdline {
		return p, ErrNoCmdline
	}
	// An EFI System Partition that is not also a Raspberry Pi's boot
	// partition is read by firmware, not by the system's first boot.
	if part.ESP() && !names["config.txt"] && !names["cmdline.txt"] {
		esp := fmt.Sprintf("partition %d (%s, %s)", part.Number, part.Type(), fat.kind)
		switch {
		case len(c.ConfigTxt) > 0:
			return p, fmt.Errorf("%w: %s; config.txt lines are read from a Raspberry Pi's boot partition", ErrESP, esp)
		case format == FormatPreseed:
			return p, fmt.Errorf("%w: %s; rpi-preseed reads rpi-preseed.toml from a Raspberry Pi's boot partition", ErrESP, esp)
		case format.cloud() && !names["user-data"] && !names["meta-data"] && !names["network-config"] && !strings.EqualFold(fat.label(), cidataLabel):
			place, err := planCIDATA(v, blockSize)
			if err != nil {
				return p, fmt.Errorf("%s is an EFI System Partition, which cloud-init does not read its settings from: %w", esp, err)
			}
			p.cidata = &place
			p.res.Needs = place.needs
			p.res.Where = fmt.Sprintf("a new partition %d labelled %s at byte offset %d, where cloud-init's NoCloud reads them (%s is an EFI System Partition, which it does not read)",
				place.number, cidataLabel, place.start, esp)
		}
	}
	// Refusals come before the first byte: an empty file in the way.
	planned := []string{"config.txt", "firstrun.sh", "rpi-preseed.toml", "meta-data", "user-data", "network-config"}
	for name := range c.Files {
		planned = append(planned, name)
	}
	for _, name := range planned {
		if err := fat.replaceable(name); err != nil {
			return p, err
		}
	}
	return p, nil
}

// Inspect says which format Apply would write into v's boot partition,
// and why, or why it would refuse, writing nothing: the check of an image
// before a card is written.
func Inspect(v Volume, blockSize int, c Config) (Result, error) {
	p, err := plan(v, blockSize, &c)
	return p.res, err
}

// Apply writes c's first-boot settings into the first partition of v (a
// whole disk: MBR or GPT), which must be FAT. Everything is read and
// written through v; v may be left partly written when Apply fails, so
// the caller keeps the disk from booting until it succeeds (the write
// holds its first transfer back).
func Apply(v Volume, blockSize int, c Config, opts Options) (Result, error) {
	p, err := plan(v, blockSize, &c)
	if err != nil {
		return p.res, err
	}
	fat, format, res := p.fat, p.res.Format, p.res
	cmdline, hasCmdline := p.cmdline, p.hasCmdline
	s, err := resolve(&c, opts.Rand)
	if err != nil {
		return res, err
	}
	seed := fat // where the cloud-init seed goes
	if p.cidata != nil {
		if seed, err = p.cidata.add(v, blockSize, opts.Rand); err != nil {
			return res, err
		}
	}
	writeTo := func(fat *bootFS, name string, data []byte) error {
		if err := fat.writeFile(name, data); err != nil {
			return fmt.Errorf("writing %s into the %s partition at byte offset %d: %w", name, fat.kind, fat.start, err)
		}
		// Read back through the file system as the system will read it:
		// what the FAT library wrote is the file meant, or nothing is
		// said to have been customised.
		if back, _, err := fat.readFile(name); err != nil {
			return fmt.Errorf("reading back %s from the %s partition at byte offset %d: %w", name, fat.kind, fat.start, err)
		} else if !bytes.Equal(back, data) {
			return fmt.Errorf("%w: %s reads back as %d bytes that differ from the %d written", ErrReadBack, name, len(back), len(data))
		}
		sum := sha256.Sum256(data)
		res.Files = append(res.Files, File{Name: name, Size: len(data), SHA256: hex.EncodeToString(sum[:])})
		return nil
	}
	write := func(name string, data []byte) error { return writeTo(fat, name, data) }
	readFile := func(path string) ([]byte, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, &failure.SettingError{Setting: SettingFile, Err: err}
		}
		return data, nil
	}

	if len(c.ConfigTxt) > 0 {
		config, _, err := fat.readFile("config.txt")
		if err != nil {
			return res, fmt.Errorf("reading config.txt: %w", err)
		}
		if err := write("config.txt", editConfigTxt(config, c.ConfigTxt)); err != nil {
			return res, err
		}
	}
	// Every run rewrites cmdline.txt from what the image had: an entry of
	// an earlier customisation is taken out before this one's goes in.
	line := earlierAdded.ReplaceAllString(strings.TrimSpace(string(cmdline)), "")
	addition := ""
	switch {
	case format == FormatSystemd:
		script := s.firstRun()
		if c.FirstRun != "" {
			if script, err = readFile(c.FirstRun); err != nil {
				return res, err
			}
		}
		if err := write("firstrun.sh", script); err != nil {
			return res, err
		}
		addition = systemdRun
	case format == FormatPreseed:
		toml, err := s.preseed()
		if err != nil {
			return res, err
		}
		if toml != nil {
			if err := write("rpi-preseed.toml", toml); err != nil {
				return res, err
			}
		}
	case format.cloud():
		user, err := s.userData()
		if err != nil {
			return res, err
		}
		network, err := s.networkConfig()
		if err != nil {
			return res, err
		}
		if user != nil {
			user = append([]byte("#cloud-config\n"), user...)
		}
		if c.UserData != "" {
			if user, err = readFile(c.UserData); err != nil {
				return res, err
			}
		}
		if c.NetworkConfig != "" {
			if network, err = readFile(c.NetworkConfig); err != nil {
				return res, err
			}
		}
		if user != nil || network != nil {
			now := time.Now
			if opts.Now != nil {
				now = opts.Now
			}
			id := fmt.Sprintf("usbflash-%d-%d", now().UnixMilli(), opts.Card)
			meta, err := metaData(id)
			if err != nil {
				return res, err
			}
			if err := writeTo(seed, "meta-data", meta); err != nil {
				return res, err
			}
			if user != nil {
				if err := writeTo(seed, "user-data", user); err != nil {
					return res, err
				}
			}
			if network != nil {
				if err := writeTo(seed, "network-config", network); err != nil {
					return res, err
				}
			}
			addition = " ds=nocloud;i=" + id
		}
	}
	if hasCmdline && (addition != "" || line != strings.TrimSpace(string(cmdline))) {
		if err := write("cmdline.txt", []byte(line+addition)); err != nil {
			return res, err
		}
	}
	extra := make([]string, 0, len(c.Files))
	for name := range c.Files {
		extra = append(extra, name)
	}
	slices.Sort(extra)
	for _, name := range extra {
		data, err := readFile(c.Files[name])
		if err != nil {
			return res, err
		}
		if err := write(name, data); err != nil {
			return res, err
		}
	}
	if err := fat.finish(); err != nil {
		return res, err
	}
	if seed != fat {
		if err := seed.finish(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Describe is what the result says in one line: the format, the files.
func (r Result) Describe() string {
	names := make([]string, len(r.Files))
	for i, f := range r.Files {
		names[i] = f.Name
	}
	s := fmt.Sprintf("customised (%s, %s): %s", r.Format, r.FAT, strings.Join(names, ", "))
	if r.Where != "" {
		s += "; the settings in " + r.Where
	}
	return s
}
