package dist

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"time"
)

// Foreign is a system other than Linux usbflash is shipped for: a
// CGO_ENABLED=0 binary whose USB backend loads libusb-1.0 at run time
// (usbms/libusbdl), in an archive a package manager installs from: a
// tarball and a Homebrew formula for macOS, a zip and a Scoop manifest for
// Windows.
type Foreign struct {
	GOOS, GOARCH string
}

// Name is the platform in file names and -platforms: darwin-arm64.
func (f Foreign) Name() string { return f.GOOS + "-" + f.GOARCH }

// Foreigns are the shipped systems other than Linux.
func Foreigns() []Foreign {
	return []Foreign{{"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"windows", "arm64"}}
}

// DefaultURLBase is where the formula and the manifest say the archives
// are downloaded from; %s is the version.
const DefaultURLBase = "https://github.com/usbflash/usbflash/releases/download/v%s"

// archive is one foreign platform's archive as built.
type archive struct {
	f            Foreign
	name, sha256 string
}

// buildForeign builds each foreign platform's binary and archive into
// o.Out, then the Homebrew formula (usbflash.rb) and the Scoop manifest
// (usbflash.json) naming them with their SHA-256, and returns the names
// written.
func buildForeign(ctx context.Context, o Options, v Version, d *docs, work string) ([]string, error) {
	var names []string
	var built []archive
	for _, f := range o.Foreign {
		fmt.Fprintf(o.Log, "== %s/%s (libusb loaded at run time)\n", f.GOOS, f.GOARCH)
		exe := "usbflash"
		if f.GOOS == "windows" {
			exe += ".exe"
		}
		bin := filepath.Join(work, f.Name(), exe)
		cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags", o.Stamp.LDFlags(), "-o", bin, "./cmd/usbflash")
		cmd.Dir = o.Repo
		cmd.Env = buildEnv(f.GOOS, f.GOARCH, "")
		cmd.Stdout, cmd.Stderr = o.Log, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("building %s/%s: %w", f.GOOS, f.GOARCH, err)
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		top := fmt.Sprintf("usbflash-%s-%s", v, f.Name())
		a := archive{f: f}
		if f.GOOS == "windows" {
			a.name = top + ".zip"
			err = writeFile(filepath.Join(o.Out, a.name), func(w io.Writer) error {
				return writeZip(w, []file{{Tar: exe, Data: binary, Mode: 0o755}, {Tar: "README.md", Data: d.readme, Mode: 0o644}}, o.Stamp.Time)
			})
		} else {
			a.name = top + ".tar.gz"
			err = writeFile(filepath.Join(o.Out, a.name), func(w io.Writer) error {
				return writeTarball(w, top, foreignPayload(binary, d), o.Stamp.Time)
			})
		}
		if err != nil {
			return nil, err
		}
		if a.sha256, err = fileSHA256(filepath.Join(o.Out, a.name)); err != nil {
			return nil, err
		}
		built = append(built, a)
		names = append(names, a.name)
	}
	base := o.URLBase
	if base == "" {
		base = fmt.Sprintf(DefaultURLBase, v)
	}
	for _, m := range []struct {
		goos, name string
		render     func(io.Writer, string, string, []archive) error
	}{{"darwin", "usbflash.rb", homebrewFormula}, {"windows", "usbflash.json", scoopManifest}} {
		var these []archive
		for _, a := range built {
			if a.f.GOOS == m.goos {
				these = append(these, a)
			}
		}
		if len(these) == 0 {
			continue
		}
		if err := writeFile(filepath.Join(o.Out, m.name), func(w io.Writer) error {
			return m.render(w, v.String(), base, these)
		}); err != nil {
			return nil, err
		}
		names = append(names, m.name)
	}
	return names, nil
}

// foreignPayload is what the macOS tarball holds: the binary, the README,
// the man pages and the completions (no udev rule, no systemd unit).
func foreignPayload(binary []byte, d *docs) []file {
	var out []file
	for _, f := range payload(binary, d) {
		if f.Tar == path0(RulePath) || f.Tar == path0(UnitPath) || f.Tar == "" {
			continue
		}
		out = append(out, f)
	}
	return out
}

func path0(p string) string { return filepath.Base(p) }

// writeZip writes the files at their Tar paths, in name order, dated
// mtime, deflated: the same bytes for the same files.
func writeZip(w io.Writer, fs []file, mtime time.Time) error {
	fs = slices.Clone(fs)
	slices.SortFunc(fs, func(a, b file) int { return strings.Compare(a.Tar, b.Tar) })
	z := zip.NewWriter(w)
	for _, f := range fs {
		h := &zip.FileHeader{Name: f.Tar, Method: zip.Deflate, Modified: mtime.UTC()}
		h.SetMode(f.Mode)
		fw, err := z.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.Data); err != nil {
			return err
		}
	}
	return z.Close()
}

func fileSHA256(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// description is what the formula and the manifest say usbflash is.
const description = "Write OS images to SD cards and USB sticks over USB mass storage, from user space"

var formulaTemplate = template.Must(template.New("formula").Parse(`# Homebrew formula for usbflash {{.Version}}, written by make dist.
class Usbflash < Formula
  desc "{{.Desc}}"
  homepage "https://github.com/usbflash/usbflash"
  version "{{.Version}}"
  # usbflash loads libusb-1.0 at run time to reach card readers.
  depends_on "libusb"
{{- range .Archives}}
  {{if .Arm}}on_arm{{else}}on_intel{{end}} do
    url "{{$.Base}}/{{.Name}}"
    sha256 "{{.SHA256}}"
  end
{{- end}}

  def install
    bin.install "usbflash"
    man1.install Dir["man/*.1.gz"]
    bash_completion.install "completions/usbflash.bash" => "usbflash"
    zsh_completion.install "completions/_usbflash"
    fish_completion.install "completions/usbflash.fish"
  end

  def caveats
    <<~EOS
      Taking a card reader from macOS's own driver needs root: eject the
      card's volumes (diskutil unmountDisk /dev/diskN), then run
        sudo usbflash write IMAGE usb:N
    EOS
  end

  test do
    assert_match "usbflash", shell_output("#{bin}/usbflash --version")
  end
end
`))

// homebrewFormula writes a formula installing the macOS archives.
func homebrewFormula(w io.Writer, version, base string, as []archive) error {
	type entry struct {
		Arm          bool
		Name, SHA256 string
	}
	var es []entry
	for _, a := range as {
		es = append(es, entry{a.f.GOARCH == "arm64", a.name, a.sha256})
	}
	return formulaTemplate.Execute(w, map[string]any{"Version": version, "Desc": description, "Base": base, "Archives": es})
}

// scoopManifest writes a Scoop manifest installing the Windows archives.
func scoopManifest(w io.Writer, version, base string, as []archive) error {
	type arch struct {
		URL  string `json:"url"`
		Hash string `json:"hash"`
	}
	archs := map[string]arch{}
	for _, a := range as {
		key := map[string]string{"amd64": "64bit", "arm64": "arm64", "386": "32bit"}[a.f.GOARCH]
		archs[key] = arch{URL: base + "/" + a.name, Hash: a.sha256}
	}
	m := struct {
		Version      string          `json:"version"`
		Description  string          `json:"description"`
		Homepage     string          `json:"homepage"`
		License      string          `json:"license"`
		Architecture map[string]arch `json:"architecture"`
		Bin          string          `json:"bin"`
		Notes        []string        `json:"notes"`
	}{version, description, "https://github.com/usbflash/usbflash", "Unknown", archs, "usbflash.exe", []string{
		"usbflash reaches card readers through libusb-1.0: put libusb-1.0.dll (libusb's Windows release,",
		"the build for this architecture) beside usbflash.exe or in a directory on PATH.",
		"A reader must be bound to WinUSB (Zadig does it) for usbflash to drive it.",
	}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "    ")
	if err := enc.Encode(m); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
