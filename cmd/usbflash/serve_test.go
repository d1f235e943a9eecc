package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/ui/web"
)

// TestServeArgs: a page's request is the command line that gives its
// choices, serve's settings after the flags it always passes, the image
// and the cards after "--" (a path that looks like a flag stays a path);
// a station says --watch --yes (its confirmation) and takes serve's
// report; a write without verify asks no verify hash.
func TestServeArgs(t *testing.T) {
	a := &app{queueDepth: 4, transport: "auto", readers: "sim:/bus"}
	f := serveFlags{verifyHash: "xxh3", report: "/r.csv", stopTimeout: time.Minute, catalog: catalogFlags{catalog: "/os_list.json"}}
	for _, tc := range []struct {
		req  web.Request
		want string // after the flags every request has
	}{
		{web.Request{Kind: web.KindWrite, Image: web.Image{Path: "--yes"}, Targets: []string{"sim:a", "sim:b"}},
			"--catalog=/os_list.json --verify-hash=xxh3 -- --yes sim:a sim:b"},
		{web.Request{Kind: web.KindWrite, Image: web.Image{URL: "https://h/os.img", SHA256: "ab"}, Targets: []string{"0"}, NoVerify: true, Eject: true, Check: true},
			"--catalog=/os_list.json --sha256=ab --no-verify --eject --check -- https://h/os.img 0"},
		{web.Request{Kind: web.KindStation, Image: web.Image{OS: "Pi OS"}, Confirm: true},
			"--os=Pi OS --catalog=/os_list.json --verify-hash=xxh3 --watch --yes --report=/r.csv --stop-timeout=1m0s --"},
		{web.Request{Kind: web.KindWrite, Image: web.Image{Stream: &web.Stream{Name: "x", Size: 1}}, Targets: []string{"sim:a"}},
			"--catalog=/os_list.json --verify-hash=xxh3 -- - sim:a"},
		{web.Request{Kind: web.KindVerify, Image: web.Image{Path: "/i"}, Targets: []string{"sim:a"}}, "--catalog=/os_list.json -- /i sim:a"},
		{web.Request{Kind: web.KindCheck, Targets: []string{"sim:a"}}, "-- sim:a"},
		{web.Request{Kind: web.KindBench, Targets: []string{"sim:a"}}, "--plot=/p.svg -- sim:a"},
	} {
		args := a.serveArgs(f, tc.req, "/p.svg")
		always := []string{"--json", "--quirks=", "--transport=auto", "--queue-depth=4", "--ca-cert=", "--readers=sim:/bus"}
		if !slices.Equal(args[1:7], always) || strings.Join(args[7:], " ") != tc.want {
			t.Errorf("%+v:\n%q\nwant %s %q", tc.req, args, always, tc.want)
		}
		if cmd := map[string]string{web.KindStation: "write"}[tc.req.Kind]; cmd != "" && args[0] != cmd || cmd == "" && args[0] != tc.req.Kind {
			t.Errorf("%+v: command %s", tc.req, args[0])
		}
	}
}
