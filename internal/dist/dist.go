// Package dist builds usbflash's release files (make dist): for each Linux
// platform the static binary, a tarball, and .deb, .rpm and .apk packages
// (nfpm as a library) holding the binary, the udev rule that lets the user
// at the seat open readers without root, man pages of every command and
// the shell completions, generated at build time from the command tree;
// for macOS (amd64, arm64) a tarball and a Homebrew formula, for Windows
// (amd64, arm64) a zip and a Scoop manifest, the formula and the manifest
// naming each archive with its SHA-256; then one SHA256SUMS over them all.
//
// Every byte follows from the commit: the binaries are built with
// -trimpath and no build id, the version stamped from the commit, and
// every file in the archives has the commit's time, root's ownership and
// a fixed mode, in a fixed order. Two builds of one commit with one Go
// toolchain give the same files (make dist-repro checks it).
package dist

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The packages' own files, beside this one.
var (
	//go:embed 70-usbflash.rules
	udevRule []byte
	//go:embed postinstall.sh
	postInstall []byte
	//go:embed postremove.sh
	postRemove []byte
	//go:embed lintian-overrides
	lintianOverrides []byte
	//go:embed usbflash-station.service
	stationUnit []byte
)

// Group is the system group the udev rule opens readers to by default,
// which the packages create empty (postinstall.sh): an administrator adds
// the users who write cards.
const Group = "usbflash"

// RulePath is where the packages put the udev rule. Its name sorts before
// 73-seat-late.rules, which turns the uaccess tag of its opt-in variant
// into an ACL.
const RulePath = "/usr/lib/udev/rules.d/70-usbflash.rules"

// UnitPath is where the packages put the station's systemd unit. No
// package enables it: a station is a machine its owner sets up (a user, an
// image), not what installing usbflash on a desktop should start.
const UnitPath = "/usr/lib/systemd/system/usbflash-station.service"

// Platform is one Linux architecture usbflash is shipped for.
type Platform struct {
	// Name is Debian's name for it, in file names: amd64, arm64, armhf,
	// i386, riscv64.
	Name string
	// GOARCH and GOARM build it.
	GOARCH, GOARM string
	// Arch is nfpm's name, which each packager translates to its own
	// (386: i386 for deb and rpm, x86 for apk; arm7: armhf, armv7hl,
	// armv7).
	Arch string
}

// Platforms are the shipped Linux platforms. armhf is ARMv7 with hardware
// floating point (GOARM=7): what Debian's armhf, Raspberry Pi OS's 32-bit
// release on a Pi 2 or later and Fedora's armv7hl run; ARMv6 boards (the
// first Pi, the Pi Zero) are left out, as Debian's armhf leaves them.
func Platforms() []Platform {
	return []Platform{
		{Name: "amd64", GOARCH: "amd64", Arch: "amd64"},
		{Name: "arm64", GOARCH: "arm64", Arch: "arm64"},
		{Name: "armhf", GOARCH: "arm", GOARM: "7", Arch: "arm7"},
		{Name: "i386", GOARCH: "386", Arch: "386"},
		{Name: "riscv64", GOARCH: "riscv64", Arch: "riscv64"},
	}
}

// Options say what to build and where.
type Options struct {
	// Repo is the module's root directory: what is built.
	Repo string
	// Out is the directory the release files are written to; it is
	// emptied first.
	Out string
	// Go is the go command.
	Go string
	// Platforms are the platforms built; all of Platforms() when nil.
	Platforms []Platform
	// Foreign are the systems other than Linux built; all of Foreigns()
	// when nil.
	Foreign []Foreign
	// URLBase is where the Homebrew formula and the Scoop manifest say
	// the archives are downloaded from; DefaultURLBase when "".
	URLBase string
	// Stamp describes the commit; from git in Repo when zero.
	Stamp Stamp
	// Log gets a line per step; nil: none.
	Log io.Writer
	// Signing says which packages are signed, with which keys; the zero
	// value signs none.
	Signing Signing
}

// Build builds the release files into o.Out and returns their names, the
// last being SHA256SUMS.
func Build(ctx context.Context, o Options) ([]string, error) {
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Platforms == nil {
		o.Platforms = Platforms()
	}
	if o.Foreign == nil {
		o.Foreign = Foreigns()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	// A key that cannot be read fails the build now, not after the
	// first platform's binary.
	for _, k := range []string{o.Signing.APKKey, o.Signing.PGPKey} {
		if k == "" {
			continue
		}
		if _, err := os.ReadFile(k); err != nil {
			return nil, fmt.Errorf("a signing key: %w", err)
		}
	}
	if o.Stamp.Revision == "" {
		s, err := GitStamp(ctx, o.Repo)
		if err != nil {
			return nil, err
		}
		o.Stamp = s
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "usbflash-dist-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	fmt.Fprintf(o.Log, "== man pages and completions (%s)\n", o.Stamp.Describe)
	docs, err := generateDocs(ctx, o, work)
	if err != nil {
		return nil, err
	}
	v := ParseVersion(o.Stamp)
	var names []string
	for _, p := range o.Platforms {
		fmt.Fprintf(o.Log, "== linux/%s\n", p.Name)
		bin := filepath.Join(o.Out, fmt.Sprintf("usbflash-%s-linux-%s", v, p.Name))
		if err := buildBinary(ctx, o, p, bin); err != nil {
			return nil, err
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		if err := os.Chmod(bin, 0o755); err != nil {
			return nil, err
		}
		names = append(names, filepath.Base(bin))
		files := payload(binary, docs)
		tarName := filepath.Base(bin) + ".tar.gz"
		if err := writeFile(filepath.Join(o.Out, tarName), func(w io.Writer) error {
			return writeTarball(w, strings.TrimSuffix(tarName, ".tar.gz"), files, o.Stamp.Time)
		}); err != nil {
			return nil, err
		}
		names = append(names, tarName)
		for _, format := range formats {
			name, err := writePackage(o.Out, format, p, v, o.Stamp, files, work, o.Signing)
			if err != nil {
				return nil, fmt.Errorf("%s for %s: %w", format, p.Name, err)
			}
			names = append(names, name)
		}
	}
	foreign, err := buildForeign(ctx, o, v, docs, work)
	if err != nil {
		return nil, err
	}
	names = append(names, foreign...)
	if err := writeFile(filepath.Join(o.Out, "SHA256SUMS"), func(w io.Writer) error {
		return writeSums(w, o.Out, names)
	}); err != nil {
		return nil, err
	}
	return append(names, "SHA256SUMS"), nil
}

// GitStamp describes the commit checked out in repo.
func GitStamp(ctx context.Context, repo string) (Stamp, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	var s Stamp
	var err error
	if s.Describe, err = git("describe", "--tags", "--always", "--dirty"); err != nil {
		return s, err
	}
	if s.Revision, err = git("rev-parse", "HEAD"); err != nil {
		return s, err
	}
	epoch, err := git("log", "-1", "--format=%ct")
	if err != nil {
		return s, err
	}
	if s.Time, err = parseEpoch(epoch); err != nil {
		return s, err
	}
	s.Modified = strings.HasSuffix(s.Describe, "-dirty")
	return s, nil
}

// docs are the generated man pages (gzipped) and completions, by name.
type docs struct {
	man       map[string][]byte // usbflash-write.1.gz: gzip of the page
	bash, zsh []byte
	fish      []byte
	manNames  []string // sorted
	readme    []byte
}

// generateDocs builds usbflash for this machine with -tags gendocs and has
// it write its man pages and completions, dated by the commit.
func generateDocs(ctx context.Context, o Options, work string) (*docs, error) {
	bin := filepath.Join(work, "usbflash-gendocs")
	build := exec.CommandContext(ctx, o.Go, "build", "-tags", "gendocs", "-trimpath",
		"-ldflags", o.Stamp.LDFlags(), "-o", bin, "./cmd/usbflash")
	build.Dir = o.Repo
	build.Env = buildEnv("", "", "")
	build.Stdout, build.Stderr = o.Log, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building the man page generator: %w", err)
	}
	dir := filepath.Join(work, "docs")
	gen := exec.CommandContext(ctx, bin, "gendocs", dir)
	gen.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(o.Stamp.Time.Unix(), 10))
	gen.Stdout, gen.Stderr = o.Log, os.Stderr
	if err := gen.Run(); err != nil {
		return nil, fmt.Errorf("generating man pages and completions: %w", err)
	}
	d := &docs{man: map[string][]byte{}}
	pages, err := filepath.Glob(filepath.Join(dir, "man", "*.1"))
	if err != nil {
		return nil, err
	}
	if len(pages) == 0 {
		return nil, errors.New("the generator wrote no man pages")
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		z, err := gzipBytes(b)
		if err != nil {
			return nil, err
		}
		name := filepath.Base(p) + ".gz"
		d.man[name] = z
		d.manNames = append(d.manNames, name)
	}
	slices.Sort(d.manNames)
	for _, c := range []struct {
		name string
		to   *[]byte
	}{{"usbflash.bash", &d.bash}, {"_usbflash", &d.zsh}, {"usbflash.fish", &d.fish}} {
		if *c.to, err = os.ReadFile(filepath.Join(dir, "completions", c.name)); err != nil {
			return nil, err
		}
	}
	if d.readme, err = os.ReadFile(filepath.Join(o.Repo, "README.md")); err != nil {
		return nil, err
	}
	return d, nil
}

// buildEnv is the environment of a build for goarch ("" for this
// machine): static, and every setting that changes the output fixed, so
// the caller's environment (GOFLAGS, GOAMD64, a newer toolchain) cannot.
func buildEnv(goos, goarch, goarm string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GO") || k == "CGO_ENABLED" {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range []string{"GOPATH", "GOCACHE", "GOMODCACHE", "GOPROXY", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOSUMDB", "GOINSECURE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false -mod=readonly", "GOTOOLCHAIN=local",
		"GOAMD64=v1", "GO386=sse2", "GOARM64=v8.0", "GORISCV64=rva20u64", "GOEXPERIMENT=")
	if goarch != "" {
		env = append(env, "GOOS="+goos, "GOARCH="+goarch)
	}
	if goarm != "" {
		env = append(env, "GOARM="+goarm)
	}
	return env
}

// buildBinary builds the static usbfs binary of p into path.
func buildBinary(ctx context.Context, o Options, p Platform, path string) error {
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags", o.Stamp.LDFlags(), "-o", path, "./cmd/usbflash")
	cmd.Dir = o.Repo
	cmd.Env = buildEnv("linux", p.GOARCH, p.GOARM)
	cmd.Stdout, cmd.Stderr = o.Log, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building linux/%s: %w", p.Name, err)
	}
	return nil
}

// gzipBytes is gzip -9n: no name, no time.
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	z, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := z.Write(b); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeFile writes path with fill, removing it when fill fails.
func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// writeSums writes sha256sum's format for names in dir, in order.
func writeSums(w io.Writer, dir string, names []string) error {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for _, n := range sorted {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), n); err != nil {
			return err
		}
	}
	return nil
}
