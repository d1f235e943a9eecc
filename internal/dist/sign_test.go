package dist

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/testpgp"
)

// apkSegments splits an apk into its gzip streams, as apk reads it:
// [signature,] control, data.
func apkSegments(t *testing.T, apk []byte) [][]byte {
	t.Helper()
	var segs [][]byte
	r := bytes.NewReader(apk)
	for r.Len() > 0 {
		start := len(apk) - r.Len()
		// bytes.Reader is an io.ByteReader: gzip reads no further than
		// its stream's end.
		z, err := gzip.NewReader(r)
		if err != nil {
			t.Fatalf("gzip stream at %d: %v", start, err)
		}
		z.Multistream(false)
		if _, err := io.Copy(io.Discard, z); err != nil {
			t.Fatal(err)
		}
		segs = append(segs, apk[start:len(apk)-r.Len()])
	}
	return segs
}

// firstEntry is the first file of a gzipped tar segment and its data.
func firstEntry(t *testing.T, seg []byte) (string, []byte) {
	t.Helper()
	z, err := gzip.NewReader(bytes.NewReader(seg))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(z)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	return h.Name, b
}

// openssl runs openssl in dir and returns its output and error.
func openssl(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("openssl", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if errors.Is(err, exec.ErrNotFound) {
		t.Fatal("openssl is needed to check the apk's signature (Debian: apt-get install openssl)")
	}
	return string(out), err
}

// signedAPK builds the amd64 apk signed as sign says.
func signedAPK(t *testing.T, sign Signing) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	v := ParseVersion(Stamp{Describe: "v1.2.3", Revision: "abcdef0123", Time: commitTime})
	name, err := writePackage(dir, "apk", Platforms()[0], v, Stamp{Revision: "abcdef0123", Time: commitTime},
		payload([]byte("binary"), testDocs()), t.TempDir(), sign)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(dir, name))
}

// TestSignedAPKVerifiesWithOpenSSL signs an apk with throwaway keys made
// by openssl, as a publisher makes them, and checks the signature as apk
// does: RSA over the SHA-1 of the control segment, with the public key
// named in the signature's file name.
func TestSignedAPKVerifiesWithOpenSSL(t *testing.T) {
	dir := t.TempDir()
	if out, err := openssl(t, dir, "genrsa", "-out", "plain.pem", "2048"); err != nil {
		t.Fatalf("openssl genrsa: %v\n%s", err, out)
	}
	if out, err := openssl(t, dir, "genrsa", "-traditional", "-aes256", "-passout", "pass:sesame", "-out", "locked.pem", "2048"); err != nil {
		t.Fatalf("openssl genrsa: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name     string
		key      string
		pass     string
		keyName  string
		wantName string
	}{
		{"PKCS#8 key, default name", "plain.pem", "", "", DefaultAPKKeyName},
		{"encrypted key, own name", "locked.pem", "sesame", "release-5f3a.rsa.pub", "release-5f3a.rsa.pub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := filepath.Join(dir, tc.key)
			sign := Signing{APKKey: key, APKPassphrase: tc.pass, APKKeyName: tc.keyName}
			apk, err := signedAPK(t, sign)
			if err != nil {
				t.Fatal(err)
			}
			segs := apkSegments(t, apk)
			if len(segs) != 3 {
				t.Fatalf("%d gzip streams, want signature, control and data", len(segs))
			}
			sigName, sig := firstEntry(t, segs[0])
			if sigName != ".SIGN.RSA."+tc.wantName {
				t.Errorf("signature named %q, want .SIGN.RSA.%s", sigName, tc.wantName)
			}
			if name, _ := firstEntry(t, segs[1]); name != ".PKGINFO" {
				t.Errorf("control segment starts with %q", name)
			}
			work := t.TempDir()
			pubArgs := []string{"rsa", "-in", key, "-pubout", "-out", "pub.pem"}
			if tc.pass != "" {
				pubArgs = append(pubArgs, "-passin", "pass:"+tc.pass)
			}
			if out, err := openssl(t, work, pubArgs...); err != nil {
				t.Fatalf("openssl rsa -pubout: %v\n%s", err, out)
			}
			tampered := bytes.Clone(segs[1])
			tampered[len(tampered)/2] ^= 1
			for _, f := range []struct {
				name string
				data []byte
			}{{"sig", sig}, {"control.tgz", segs[1]}, {"tampered.tgz", tampered}} {
				if err := os.WriteFile(filepath.Join(work, f.name), f.data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, err := openssl(t, work, "dgst", "-sha1", "-verify", "pub.pem", "-signature", "sig", "control.tgz")
			if err != nil || !strings.Contains(out, "Verified OK") {
				t.Errorf("openssl does not verify the control segment: %v\n%s", err, out)
			}
			if out, err := openssl(t, work, "dgst", "-sha1", "-verify", "pub.pem", "-signature", "sig", "tampered.tgz"); err == nil {
				t.Errorf("openssl verifies a changed control segment:\n%s", out)
			}
			// PKCS#1 v1.5 is deterministic: one key, the same bytes.
			again, err := signedAPK(t, sign)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(apk, again) {
				t.Error("two signed builds with one key differ")
			}
		})
	}
	t.Run("wrong passphrase", func(t *testing.T) {
		if _, err := signedAPK(t, Signing{APKKey: filepath.Join(dir, "locked.pem"), APKPassphrase: "wrong"}); err == nil {
			t.Error("a key that does not decrypt signed the apk")
		}
	})
	t.Run("unsigned", func(t *testing.T) {
		apk, err := signedAPK(t, Signing{})
		if err != nil {
			t.Fatal(err)
		}
		segs := apkSegments(t, apk)
		if len(segs) != 2 {
			t.Fatalf("%d gzip streams, want control and data", len(segs))
		}
		if name, _ := firstEntry(t, segs[0]); name != ".PKGINFO" {
			t.Errorf("an unsigned apk starts with %q, want .PKGINFO", name)
		}
	})
}

// pgpSigned builds the amd64 package of format signed with key.
func pgpSigned(t *testing.T, format, key string) []byte {
	t.Helper()
	dir := t.TempDir()
	v := ParseVersion(Stamp{Describe: "v1.2.3", Revision: "abcdef0123", Time: commitTime})
	name, err := writePackage(dir, format, Platforms()[0], v, Stamp{Revision: "abcdef0123", Time: commitTime},
		payload([]byte("binary"), testDocs()), t.TempDir(), Signing{PGPKey: key})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// run runs a command in dir and returns its output and error; a missing
// command fails the test.
func run(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("%s is needed to check the packages' signatures", name)
	}
	return string(out), err
}

// TestSignedRPMAndDebVerify signs the .rpm and the .deb with a throwaway
// OpenPGP key made by gpg, then checks them as their systems would: rpm -K
// with the public key imported into an rpm database of its own, and gpg
// --verify of the .deb's _gpgorigin over debian-binary, control and data
// (debsign's signature, as debsig-verify reads it).
func TestSignedRPMAndDebVerify(t *testing.T) {
	s := testpgp.New(t, "usbflash release <release@example.org>", "1y")
	key := filepath.Join(t.TempDir(), "secret.asc")
	s.GPG("", "--armor", "--output", key, "--passphrase", "", "--export-secret-keys", s.Fingerprint)
	pub := s.Keyring(true)

	t.Run("rpm", func(t *testing.T) {
		dir := t.TempDir()
		signed := filepath.Join(dir, "signed.rpm")
		if err := os.WriteFile(signed, pgpSigned(t, "rpm", key), 0o644); err != nil {
			t.Fatal(err)
		}
		unsigned, _ := packageFiles(t, "rpm", payload([]byte("binary"), testDocs()))
		if err := os.WriteFile(filepath.Join(dir, "unsigned.rpm"), unsigned, 0o644); err != nil {
			t.Fatal(err)
		}
		db, empty := t.TempDir(), t.TempDir()
		if out, err := run(t, dir, "rpm", "--dbpath", db, "--import", pub); err != nil {
			t.Fatalf("rpm --import: %v\n%s", err, out)
		}
		out, err := run(t, dir, "rpm", "--dbpath", db, "-K", signed)
		if err != nil || !strings.Contains(out, "signatures OK") {
			t.Errorf("rpm -K with the key: %v\n%s", err, out)
		}
		// Without the key rpm refuses it: the check is the signature's.
		if out, err := run(t, dir, "rpm", "--dbpath", empty, "-K", signed); err == nil {
			t.Errorf("rpm -K without the key passes:\n%s", out)
		}
		if out, _ := run(t, dir, "rpm", "--dbpath", db, "-K", "unsigned.rpm"); strings.Contains(out, "signature") {
			t.Errorf("the unsigned rpm has a signature:\n%s", out)
		}
	})
	t.Run("deb", func(t *testing.T) {
		deb := pgpSigned(t, "deb", key)
		dir := t.TempDir()
		var data []byte
		for _, m := range []string{"debian-binary", "control.tar.gz", "data.tar.gz"} {
			data = append(data, arMember(t, deb, m)...)
		}
		tampered := bytes.Clone(data)
		tampered[len(tampered)-1] ^= 1
		for name, b := range map[string][]byte{"_gpgorigin": arMember(t, deb, "_gpgorigin"), "data": data, "tampered": tampered} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gpg := func(file string) (string, error) {
			return run(t, dir, "gpg", "--batch", "--homedir", s.Home, "--verify", "_gpgorigin", file)
		}
		if out, err := gpg("data"); err != nil || !strings.Contains(out, "Good signature") {
			t.Errorf("gpg --verify of the .deb: %v\n%s", err, out)
		}
		if out, err := gpg("tampered"); err == nil {
			t.Errorf("gpg verifies a changed .deb:\n%s", out)
		}
	})
}
