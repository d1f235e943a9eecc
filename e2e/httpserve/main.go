//go:build e2e

// Command httpserve serves an image and the files beside it over HTTP with
// internal/flakyhttp: a real server for the e2e guest's loopback (see
// ../url_test.go) and for measuring a write from a URL against one from a
// file (-rate). Each -drop offset closes the connection of one request for
// the image, in order, once the body reached it.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	image := flag.String("image", "", "the image file; the other files of its directory are served beside it")
	drops := flag.String("drop", "", "comma-separated offsets: the i-th request for the image is cut at the i-th")
	rate := flag.Int64("rate", 0, "bytes per second of every body (0: as fast as the link)")
	ready := flag.String("ready", "", "a file to create once listening")
	replace := flag.String("replace", "", "a file that replaces the image (another version, another ETag) after the last -drop")
	flag.Parse()
	if err := run(*addr, *image, *drops, *rate, *ready, *replace); err != nil {
		log.Fatal(err)
	}
}

func run(addr, image, drops string, rate int64, ready, replace string) error {
	data, err := os.ReadFile(image)
	if err != nil {
		return err
	}
	st, err := os.Stat(image)
	if err != nil {
		return err
	}
	faults := map[int]flakyhttp.Fault{}
	for i, d := range strings.FieldsFunc(drops, func(r rune) bool { return r == ',' }) {
		at, err := strconv.ParseInt(d, 10, 64)
		if err != nil {
			return fmt.Errorf("-drop %q: %w", d, err)
		}
		faults[i] = flakyhttp.Fault{DropAt: at}
	}
	if replace != "" {
		v2, err := os.ReadFile(replace)
		if err != nil {
			return err
		}
		faults[len(faults)] = flakyhttp.Fault{Replace: &flakyhttp.Version{Data: v2, ETag: `"replaced"`, LastModified: time.Now()}}
	}
	srv := flakyhttp.New(flakyhttp.Version{Data: data, ETag: fmt.Sprintf(`"%x-%x"`, st.Size(), st.ModTime().UnixNano()),
		LastModified: st.ModTime()}, faults)
	srv.Path = "/" + filepath.Base(image)
	srv.Rate = rate
	entries, err := os.ReadDir(filepath.Dir(image))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != filepath.Base(image) {
			b, err := os.ReadFile(filepath.Join(filepath.Dir(image), e.Name()))
			if err != nil {
				return err
			}
			srv.Files["/"+e.Name()] = b
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if ready != "" {
		if err := os.WriteFile(ready, []byte(ln.Addr().String()), 0o644); err != nil {
			return err
		}
	}
	log.Printf("serving %s at http://%s%s", image, ln.Addr(), srv.Path)
	hs := &http.Server{Handler: logged(srv), ReadHeaderTimeout: 10 * time.Second}
	return hs.Serve(ln)
}

// logged logs each request, for the test's log.
func logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Printf("%s %s Range=%q If-Range=%q", r.Method, r.URL.Path, r.Header.Get("Range"), r.Header.Get("If-Range"))
		h.ServeHTTP(w, r)
	})
}
