// Package testpgp makes throwaway OpenPGP keys and signatures with gpg, as
// a publisher makes them, for the tests of what checks signatures
// (image's checksum lists and block maps).
package testpgp

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Signer is a throwaway OpenPGP key in a GNUPGHOME of its own, made by
// gpg as a publisher makes one.
type Signer struct {
	t           *testing.T
	Home        string
	UID         string
	Fingerprint string
}

// New makes a key for uid; extra arguments go before gpg's command
// (a --faked-system-time for a key that has expired), expire is its
// lifetime as --quick-gen-key takes it.
func New(t *testing.T, uid, expire string, extra ...string) *Signer {
	t.Helper()
	home := t.TempDir()
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	s := &Signer{t: t, Home: home, UID: uid}
	t.Cleanup(func() { exec.Command("gpgconf", "--homedir", home, "--kill", "gpg-agent").Run() })
	s.GPG("", append(extra, "--passphrase", "", "--quick-gen-key", uid, "default", "default", expire)...)
	for _, line := range strings.Split(s.GPG("", "--with-colons", "--list-keys", uid), "\n") {
		if f := strings.Split(line, ":"); f[0] == "fpr" && s.Fingerprint == "" {
			s.Fingerprint = f[9]
		}
	}
	if s.Fingerprint == "" {
		t.Fatal("gpg listed no fingerprint")
	}
	return s
}

// GPG runs gpg in dir with the signer's home and returns its output. A
// missing gpg fails the test.
func (s *Signer) GPG(dir string, args ...string) string {
	s.t.Helper()
	cmd := exec.Command("gpg", append([]string{"--batch", "--homedir", s.Home, "--pinentry-mode", "loopback"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("gpg %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// Keyring exports the signer's public key to a file, armoured or not.
func (s *Signer) Keyring(armour bool) string {
	s.t.Helper()
	path := filepath.Join(s.t.TempDir(), "keys.gpg")
	args := []string{"--output", path, "--export", s.Fingerprint}
	if armour {
		args = append([]string{"--armor"}, args...)
	}
	s.GPG("", args...)
	return path
}

// Revoke revokes the key with the revocation certificate gpg made with
// it, as its owner would publish it.
func (s *Signer) Revoke() {
	s.t.Helper()
	cert, err := os.ReadFile(filepath.Join(s.Home, "openpgp-revocs.d", s.Fingerprint+".rev"))
	if err != nil {
		s.t.Fatal(err)
	}
	// gpg keeps the certificate with its armour line escaped by a colon.
	p := filepath.Join(s.t.TempDir(), "revoke.asc")
	if err := os.WriteFile(p, bytes.Replace(cert, []byte(":-----BEGIN"), []byte("-----BEGIN"), 1), 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.GPG("", "--import", p)
}

// Sign signs the file name in dir: "clear" writes it clear-signed in
// place, a suffix (.gpg, .asc, ...) writes a detached signature beside
// it, armoured for .asc and .sign as publishers write those.
func (s *Signer) Sign(dir, name, how string, extra ...string) {
	s.t.Helper()
	args := append(extra, "--passphrase", "", "--yes")
	switch how {
	case "clear":
		s.GPG(dir, append(args, "--output", name+".clear", "--clearsign", name)...)
		if err := os.Rename(filepath.Join(dir, name+".clear"), filepath.Join(dir, name)); err != nil {
			s.t.Fatal(err)
		}
		return
	case ".asc", ".sign":
		args = append(args, "--armor")
	}
	s.GPG(dir, append(args, "--output", name+how, "--detach-sign", name)...)
}
