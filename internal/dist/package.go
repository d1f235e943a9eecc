package dist

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/apk"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/goreleaser/nfpm/v2/rpm"
)

// formats are the packages built for each platform, by nfpm's names.
var formats = []string{"deb", "rpm", "apk"}

// packagers are nfpm's packagers of formats.
func packager(format string) (nfpm.Packager, error) {
	switch format {
	case "deb":
		return deb.Default, nil
	case "rpm":
		return rpm.DefaultRPM, nil
	case "apk":
		return apk.Default, nil
	}
	return nil, fmt.Errorf("no packager %q", format)
}

// file is one file that is shipped.
type file struct {
	// Dest is where a package installs it.
	Dest string
	// Tar is its path in the tarball, under the top directory; "" for a
	// file the tarball leaves out.
	Tar  string
	Data []byte
	Mode os.FileMode
	// Only names the one package format that holds it; "" for all.
	Only string
	// NotIn names a package format that leaves it out.
	NotIn string
}

// zshDirs are where each system's zsh looks for vendor completions:
// Debian's fpath has vendor-completions, Fedora's and Alpine's
// site-functions.
var zshDirs = map[string]string{
	"deb": "/usr/share/zsh/vendor-completions",
	"rpm": "/usr/share/zsh/site-functions",
	"apk": "/usr/share/zsh/site-functions",
}

// payload is what every package and tarball of a platform holds.
func payload(binary []byte, d *docs) []file {
	fs := []file{
		{Dest: "/usr/bin/usbflash", Tar: "usbflash", Data: binary, Mode: 0o755},
		{Dest: RulePath, Tar: path.Base(RulePath), Data: udevRule, Mode: 0o644},
		// Alpine runs OpenRC: its package has no systemd unit.
		{Dest: UnitPath, Tar: path.Base(UnitPath), Data: stationUnit, Mode: 0o644, NotIn: "apk"},
		{Dest: "/usr/share/doc/usbflash/README.md", Tar: "README.md", Data: d.readme, Mode: 0o644},
		{Dest: "/usr/share/bash-completion/completions/usbflash", Tar: "completions/usbflash.bash", Data: d.bash, Mode: 0o644},
		{Dest: "/usr/share/fish/vendor_completions.d/usbflash.fish", Tar: "completions/usbflash.fish", Data: d.fish, Mode: 0o644},
	}
	for _, format := range formats {
		tarPath := ""
		if format == formats[0] {
			tarPath = "completions/_usbflash"
		}
		fs = append(fs, file{Dest: zshDirs[format] + "/_usbflash", Tar: tarPath, Data: d.zsh, Mode: 0o644, Only: format})
	}
	for _, name := range d.manNames {
		fs = append(fs, file{Dest: "/usr/share/man/man1/" + name, Tar: "man/" + name, Data: d.man[name], Mode: 0o644})
	}
	return fs
}

// writeTarball writes the files with a Tar path under top/, as
// root-owned files of the commit's time, in name order, gzipped without
// a name or time.
func writeTarball(w io.Writer, top string, fs []file, mtime time.Time) error {
	z, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	t := tar.NewWriter(z)
	var entries []file
	for _, f := range fs {
		if f.Tar != "" {
			entries = append(entries, f)
		}
	}
	slices.SortFunc(entries, func(a, b file) int { return strings.Compare(a.Tar, b.Tar) })
	dirs := map[string]bool{}
	header := func(name string, mode os.FileMode, size int64, typ byte) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: int64(mode.Perm()), Size: size, ModTime: mtime.UTC(),
			Uname: "root", Gname: "root", Format: tar.FormatUSTAR}
	}
	for _, f := range entries {
		name := top + "/" + f.Tar
		// Each directory once, before what it holds.
		for i := range name {
			if name[i] == '/' && !dirs[name[:i]] {
				dirs[name[:i]] = true
				if err := t.WriteHeader(header(name[:i]+"/", 0o755, 0, tar.TypeDir)); err != nil {
					return err
				}
			}
		}
		if err := t.WriteHeader(header(name, f.Mode, int64(len(f.Data)), tar.TypeReg)); err != nil {
			return err
		}
		if _, err := t.Write(f.Data); err != nil {
			return err
		}
	}
	if err := t.Close(); err != nil {
		return err
	}
	return z.Close()
}

// Signing names the keys the packages are signed with. Its zero value
// signs none: the packages of a commit are then the same bytes in every
// build (make dist-repro).
type Signing struct {
	// APKKey is the file of the RSA private key that signs the .apk, in
	// PEM, as abuild-keygen or `openssl genrsa` writes it (PKCS#1 or
	// PKCS#8; encrypted only as traditional PEM, `openssl genrsa
	// -traditional -aes256`, which is what nfpm decrypts); "" leaves the
	// .apk unsigned. The signature is RSA PKCS#1 v1.5 over the SHA-1 of
	// the control segment, as apk checks it: deterministic, so a signed
	// build with one key is reproducible too.
	APKKey string
	// APKKeyName is the public key's file name in /etc/apk/keys that apk
	// checks the signature with ("*.rsa.pub"); "" is the maintainer's
	// address's, DefaultAPKKeyName.
	APKKeyName string
	// APKPassphrase decrypts an encrypted APKKey.
	APKPassphrase string
	// PGPKey is the file of an OpenPGP secret key (armoured or not, as
	// `gpg --export-secret-keys` writes it; one signing key) that signs
	// the .rpm (its header signature, which `rpm -K` and dnf check) and
	// the .deb (debsign's _gpgorigin member over debian-binary, control
	// and data); "" leaves both unsigned. An OpenPGP signature holds its
	// creation time: such a build is not reproducible byte for byte.
	PGPKey string
	// PGPPassphrase decrypts an encrypted PGPKey.
	PGPPassphrase string
}

// DefaultAPKKeyName is the name a signed .apk gives its key when
// Signing.APKKeyName is empty: nfpm's default, the maintainer's address.
const DefaultAPKKeyName = "usbflash@users.noreply.github.com.rsa.pub"

// packageInfo is nfpm's description of the package of format for p,
// its files put under root (nfpm reads them from disk), signed as sign
// says.
func packageInfo(format string, p Platform, v Version, s Stamp, fs []file, root string, sign Signing) (*nfpm.Info, error) {
	var contents files.Contents
	for _, f := range fs {
		if (f.Only != "" && f.Only != format) || f.NotIn == format {
			continue
		}
		src := filepath.Join(root, filepath.FromSlash(f.Dest))
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			return nil, err
		}
		if err := writeDated(src, f.Data, f.Mode, s.Time); err != nil {
			return nil, err
		}
		contents = append(contents, &files.Content{Source: src, Destination: f.Dest, Type: files.TypeFile,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: f.Mode, MTime: s.Time.UTC(), Size: int64(len(f.Data))}})
	}
	// nfpm dates the apk's scripts by their files.
	script, removeScript := filepath.Join(root, "postinstall.sh"), filepath.Join(root, "postremove.sh")
	if err := writeDated(script, postInstall, 0o755, s.Time); err != nil {
		return nil, err
	}
	if err := writeDated(removeScript, postRemove, 0o755, s.Time); err != nil {
		return nil, err
	}
	info := &nfpm.Info{
		Name:          "usbflash",
		Arch:          p.Arch,
		Platform:      "linux",
		Version:       v.Base,
		VersionSchema: "none",
		Release:       "1",
		Section:       "utils",
		Priority:      "optional",
		Maintainer:    Maintainer,
		Description: "write OS images to SD cards and USB sticks, fast and safely\n" +
			"usbflash writes OS images to SD cards and USB sticks by speaking USB\n" +
			"Bulk-Only Transport and SCSI to the card reader itself, through its own\n" +
			"userspace USB stack: no page cache, no block-layer request cap, and\n" +
			"decompression overlapped with the transfer. It verifies what it wrote.\n" +
			"A udev rule opens USB card readers and sticks to the members of the\n" +
			"group usbflash, which the package creates empty: an administrator adds\n" +
			"the users who write cards. A member can read and write every USB\n" +
			"mass-storage device raw, the machine's own disk too when it runs from\n" +
			"USB, which is as much as root there. Opening them to the user at the\n" +
			"seat instead is a commented variant of the rule.",
		Homepage: Homepage,
		MTime:    s.Time.UTC(),
		Overridables: nfpm.Overridables{
			Contents: contents,
			Umask:    0o022,
			Scripts:  nfpm.Scripts{PostInstall: script, PostRemove: removeScript},
			RPM:      nfpm.RPM{BuildHost: "reproducible", Summary: "Write OS images to SD cards and USB sticks, fast and safely", Group: "Applications/System"},
		},
	}
	pgp := nfpm.PackageSignature{KeyFile: sign.PGPKey, KeyPassphrase: sign.PGPPassphrase}
	switch format {
	case "deb", "rpm":
		info.VersionMetadata = v.Metadata()
		if sign.PGPKey != "" && format == "deb" {
			info.Deb.Signature = nfpm.DebSignature{PackageSignature: pgp, Method: "debsign", Type: "origin"}
		} else if sign.PGPKey != "" {
			info.RPM.Signature = nfpm.RPMSignature{PackageSignature: pgp}
		}
	case "apk":
		// apk has no "+": a snapshot is a _git suffix, which orders
		// after the release it follows, as deb's and rpm's "+" does.
		info.Prerelease = v.Snapshot
		if sign.APKKey != "" {
			info.APK.Signature = nfpm.APKSignature{KeyName: cmp.Or(sign.APKKeyName, DefaultAPKKeyName),
				PackageSignature: nfpm.PackageSignature{KeyFile: sign.APKKey, KeyPassphrase: sign.APKPassphrase}}
		}
	}
	if err := nfpm.PrepareForPackager(nfpm.WithDefaults(info), format); err != nil {
		return nil, err
	}
	return info, nil
}

// Maintainer and Homepage are the packages' fields.
const (
	Maintainer = "usbflash developers <usbflash@users.noreply.github.com>"
	Homepage   = "https://github.com/usbflash/usbflash"
)

// writePackage writes the package of format for p into out, signed as
// sign says, and returns its file name.
func writePackage(out, format string, p Platform, v Version, s Stamp, fs []file, work string, sign Signing) (string, error) {
	pk, err := packager(format)
	if err != nil {
		return "", err
	}
	extra, err := debianDocs(v, s)
	if err != nil {
		return "", err
	}
	fs = append(slices.Clone(fs), extra...)
	root := filepath.Join(work, "root", format+"-"+p.Name)
	info, err := packageInfo(format, p, v, s, fs, root, sign)
	if err != nil {
		return "", err
	}
	name := pk.ConventionalFileName(info)
	err = writeFile(filepath.Join(out, name), func(w io.Writer) error { return pk.Package(info, w) })
	return name, err
}

// debianDocs are the files Debian policy asks of every package: a
// changelog and a copyright file.
func debianDocs(v Version, s Stamp) ([]file, error) {
	debVersion := v.String() + "-1"
	changelog := fmt.Sprintf("usbflash (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n",
		debVersion, s.Revision, Maintainer, s.Time.UTC().Format(time.RFC1123Z))
	z, err := gzipBytes([]byte(changelog))
	if err != nil {
		return nil, err
	}
	copyright := "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n" +
		"Upstream-Name: usbflash\nSource: " + Homepage + "\n\n" +
		"Files: *\nCopyright: the usbflash developers\nLicense: no-license-stated\n" +
		" The usbflash repository does not state a license yet.\n"
	return []file{
		{Dest: "/usr/share/doc/usbflash/changelog.Debian.gz", Data: z, Mode: 0o644, Only: "deb"},
		{Dest: "/usr/share/doc/usbflash/copyright", Data: []byte(copyright), Mode: 0o644, Only: "deb"},
		{Dest: "/usr/share/lintian/overrides/usbflash", Data: lintianOverrides, Mode: 0o644, Only: "deb"},
	}, nil
}

// writeDated writes a file nfpm reads, with the commit's time: a packager
// that takes a file's time from disk takes that one.
func writeDated(path string, data []byte, mode os.FileMode, t time.Time) error {
	if err := os.WriteFile(path, data, mode); err != nil {
		return err
	}
	return os.Chtimes(path, t, t)
}

// parseEpoch reads git's %ct.
func parseEpoch(s string) (time.Time, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("commit time %q: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}
