// Command dist builds usbflash's release files into a directory (make
// dist): per Linux platform the static binary, a tarball and .deb, .rpm
// and .apk packages, and one SHA256SUMS. See internal/dist.
//
// The .apk is signed when USBFLASH_APK_KEY names an RSA private key (PEM;
// USBFLASH_APK_KEY_PASSPHRASE decrypts it, USBFLASH_APK_KEY_NAME is its
// public key's name in /etc/apk/keys), and the .rpm and .deb when
// USBFLASH_PGP_KEY names an OpenPGP secret key (USBFLASH_PGP_KEY_PASSPHRASE
// decrypts it). The keys' files stay out of the repository. Without them
// the packages are unsigned, and the build says so.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/usbflash/usbflash/internal/dist"
)

func main() {
	out := flag.String("out", "bin/dist", "the directory to write the release files to (emptied first)")
	repo := flag.String("repo", ".", "the module's root directory")
	goCmd := flag.String("go", "go", "the go command")
	only := flag.String("platforms", "", "comma-separated platforms to build (default all: "+names(dist.Platforms())+", "+foreignNames()+")")
	urlBase := flag.String("url-base", "", "where the Homebrew formula and the Scoop manifest say the archives are (default "+dist.DefaultURLBase+", %s the version)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o := dist.Options{Repo: *repo, Out: *out, Go: *goCmd, Log: os.Stderr, Signing: dist.Signing{
		APKKey:        os.Getenv("USBFLASH_APK_KEY"),
		APKKeyName:    os.Getenv("USBFLASH_APK_KEY_NAME"),
		APKPassphrase: os.Getenv("USBFLASH_APK_KEY_PASSPHRASE"),
		PGPKey:        os.Getenv("USBFLASH_PGP_KEY"),
		PGPPassphrase: os.Getenv("USBFLASH_PGP_KEY_PASSPHRASE"),
	}}
	o.URLBase = *urlBase
	if *only != "" {
		o.Platforms, o.Foreign = []dist.Platform{}, []dist.Foreign{}
		for _, n := range strings.Split(*only, ",") {
			if f, ok := findForeign(n); ok {
				o.Foreign = append(o.Foreign, f)
				continue
			}
			p, ok := find(n)
			if !ok {
				fmt.Fprintf(os.Stderr, "dist: no platform %q (have %s, %s)\n", n, names(dist.Platforms()), foreignNames())
				os.Exit(2)
			}
			o.Platforms = append(o.Platforms, p)
		}
	}
	built, err := dist.Build(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dist: %v\n", err)
		os.Exit(1)
	}
	for _, n := range built {
		fmt.Println(n)
	}
	if k := o.Signing.APKKey; k != "" {
		fmt.Fprintf(os.Stderr, "dist: the .apk packages are signed with %s (apk checks them with /etc/apk/keys/%s)\n",
			k, cmp.Or(o.Signing.APKKeyName, dist.DefaultAPKKeyName))
	} else {
		fmt.Fprintln(os.Stderr, "dist: the .apk packages are unsigned (USBFLASH_APK_KEY names an RSA key to sign them)")
	}
	if k := o.Signing.PGPKey; k != "" {
		fmt.Fprintf(os.Stderr, "dist: the .rpm and .deb packages are signed with %s\n", k)
	} else {
		fmt.Fprintln(os.Stderr, "dist: the .rpm and .deb packages are unsigned (USBFLASH_PGP_KEY names an OpenPGP key to sign them)")
	}
}

func find(name string) (dist.Platform, bool) {
	for _, p := range dist.Platforms() {
		if p.Name == name {
			return p, true
		}
	}
	return dist.Platform{}, false
}

func names(ps []dist.Platform) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Name)
	}
	return strings.Join(s, ",")
}

func findForeign(name string) (dist.Foreign, bool) {
	for _, f := range dist.Foreigns() {
		if f.Name() == name {
			return f, true
		}
	}
	return dist.Foreign{}, false
}

func foreignNames() string {
	var s []string
	for _, f := range dist.Foreigns() {
		s = append(s, f.Name())
	}
	return strings.Join(s, ",")
}
