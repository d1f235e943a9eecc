//go:build e2e

// Command urlbench measures a write from a URL against the same write from
// a local file, side by side in one run (make bench-url): for each image
// size, format and card speed it writes the file and the URL (served by
// e2e/httpserve on the loopback) in turn, rounds times, and prints the
// medians: wall seconds, MB/s of the image, CPU seconds per GiB of the
// image (usbflash's, and the server's beside it), and the URL's throughput
// as a ratio of the file's. Where a row's floor is: the download alone
// (httpsrc into io.Discard, and curl when installed) against the file's
// write, and the CPU floor, the file's CPU seconds against the URL's with
// its server's (on one machine the server, the network stack, the decoder
// and the card share the cores; on busy cores time follows CPU).
//
//	urlbench -bin bin/usbflash -serve bin/httpserve [-before OLD] [-mib 96,384] [-formats raw,gz,zst,xz] [-speeds ,40MB/s] [-rounds 3]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/testkit/osimage"
)

func main() {
	bin := flag.String("bin", "bin/usbflash", "the usbflash to measure")
	before := flag.String("before", "", "another usbflash whose URL writes are measured beside (an earlier build)")
	serve := flag.String("serve", "bin/httpserve", "e2e/httpserve, built")
	mibs := flag.String("mib", "96,384", "image sizes in MiB")
	formats := flag.String("formats", "raw,gz,zst,xz", "formats: raw, gz, zst, xz")
	speeds := flag.String("speeds", ",40MB/s", "card speeds: \"\" is memory speed, else the sim's speed= option")
	rounds := flag.Int("rounds", 3, "rounds; each row's figures are the medians")
	dir := flag.String("dir", "", "working directory (default: a temporary one, removed)")
	flag.Parse()
	if err := run(*bin, *before, *serve, *mibs, *formats, *speeds, *rounds, *dir); err != nil {
		log.Fatal(err)
	}
}

// compressors make each format from the raw image (the formats' usual
// tools and levels; xz and zstd with two threads, as published images are).
var compressors = map[string][]string{
	"gz":  {"gzip", "-6", "-c"},
	"zst": {"zstd", "-3", "-T2", "-q", "-c"},
	"xz":  {"xz", "-6", "-T2", "-c"},
}

// image is one file served by its own server (httpserve serves its
// directory's other files beside it).
type image struct {
	mib    int
	format string
	path   string
	url    string
	server *exec.Cmd
}

// sample is one write: wall time and the CPU of usbflash and of the server.
type sample struct{ wall, cpu, server float64 }

func run(bin, before, serve, mibs, formats, speeds string, rounds int, dir string) error {
	keep := dir != "" // a -dir given keeps its compressed images for the next run
	if dir == "" {
		d, err := os.MkdirTemp("", "urlbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var images []*image
	defer func() {
		for _, im := range images {
			if im.server != nil && im.server.Process != nil {
				im.server.Process.Kill()
				im.server.Wait()
			}
		}
	}()
	for _, m := range strings.Split(mibs, ",") {
		mib, err := strconv.Atoi(strings.TrimSpace(m))
		if err != nil {
			return fmt.Errorf("-mib %q: %w", m, err)
		}
		raw := osimage.Generate(int64(mib)<<20, 7)
		for _, f := range strings.Split(formats, ",") {
			im, err := makeImage(dir, raw, mib, f, keep)
			if err != nil {
				return err
			}
			if im == nil {
				continue
			}
			images = append(images, im)
			if err := im.start(serve, dir); err != nil {
				return err
			}
		}
	}
	fmt.Printf("urlbench: %s against the same file, %d rounds, medians; host: %d CPUs, load %s\n\n", bin, rounds, runtime.NumCPU(), load())
	for _, speed := range strings.Split(speeds, ",") {
		card := "memory speed"
		if speed != "" {
			card = speed
		}
		fmt.Printf("### card: %s\n\n", card)
		fmt.Println("| MiB | format | file s | file MB/s | file CPU s/GiB | URL s | URL MB/s | URL CPU s/GiB | server CPU s/GiB | **URL/file** |" +
			cond(before != "", " before URL/file |", "") + " CPU floor |" +
			" download alone s: httpsrc, curl |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|" + cond(before != "", "---|", "") + "---|---|")
		for _, im := range images {
			var file, url, old []sample
			var dl, curl []float64
			for r := range rounds {
				// Alternate which goes first: neither always meets a
				// warmer or busier machine.
				order := []string{"file", "url"}
				if r%2 == 1 {
					slices.Reverse(order)
				}
				for _, which := range order {
					src := im.path
					if which == "url" {
						src = im.url
					}
					s, err := write(bin, src, dir, im, speed)
					if err != nil {
						return err
					}
					if which == "url" {
						url = append(url, s)
					} else {
						file = append(file, s)
					}
				}
				if before != "" {
					s, err := write(before, im.url, dir, im, speed)
					if err != nil {
						return err
					}
					old = append(old, s)
				}
				if speed == "" { // the download does not depend on the card
					d, err := download(im.url)
					if err != nil {
						return err
					}
					dl = append(dl, d)
					if c, err := curlDownload(im.url); err == nil {
						curl = append(curl, c)
					}
				}
			}
			size := float64(int64(im.mib) << 20)
			fw, uw := median(file, wallOf), median(url, wallOf)
			row := fmt.Sprintf("| %d | %s | %.2f | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f | **%.2fx** |", im.mib, im.format,
				fw, size/fw/1e6, median(file, cpuOf)/(size/(1<<30)),
				uw, size/uw/1e6, median(url, cpuOf)/(size/(1<<30)), median(url, serverOf)/(size/(1<<30)), fw/uw)
			if before != "" {
				row += fmt.Sprintf(" %.2fx |", fw/median(old, wallOf))
			}
			// On cores the run does not have to itself, time follows the
			// CPU spent: the file's CPU against the URL's with its server's
			// is the ratio a CPU-bound row can reach.
			row += fmt.Sprintf(" %.2fx |", median(file, cpuOf)/(median(url, cpuOf)+median(url, serverOf)))
			if speed == "" {
				row += fmt.Sprintf(" %.2f, %s |", medianOf(dl), cond(len(curl) > 0, fmt.Sprintf("%.2f", medianOf(curl)), "-"))
			} else {
				row += " |"
			}
			fmt.Println(row)
		}
		fmt.Println()
	}
	return nil
}

// makeImage writes the image of format f (raw: as generated) into a
// directory of its own; nil when the format's tool is not installed.
// The content is the same every run (osimage's seed 7).
func makeImage(dir string, raw []byte, mib int, f string, keep bool) (*image, error) {
	d := filepath.Join(dir, fmt.Sprintf("%d-%s", mib, f))
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("os%d.img", mib)
	if f == "raw" {
		p := filepath.Join(d, name)
		return &image{mib: mib, format: f, path: p}, os.WriteFile(p, raw, 0o644)
	}
	args, ok := compressors[f]
	if !ok {
		return nil, fmt.Errorf("format %q: want raw, gz, zst or xz", f)
	}
	if _, err := exec.LookPath(args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "urlbench: no %s: the %s rows are left out\n", args[0], f)
		return nil, nil
	}
	p := filepath.Join(d, name+"."+f)
	if fi, err := os.Stat(p); err == nil && fi.Size() > 0 && keep {
		return &image{mib: mib, format: f, path: p}, nil // made by an earlier run in this -dir
	}
	out, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(string(raw)), out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w", args[0], err)
	}
	return &image{mib: mib, format: f, path: p}, out.Close()
}

// start serves the image on a free loopback port.
func (im *image) start(serve, dir string) error {
	ready := im.path + ".ready"
	os.Remove(ready) // an earlier run's, with its address
	im.server = exec.Command(serve, "-addr", "127.0.0.1:0", "-image", im.path, "-ready", ready)
	im.server.Stderr = io.Discard // its log of requests
	if err := im.server.Start(); err != nil {
		return err
	}
	for range 1000 {
		if addr, err := os.ReadFile(ready); err == nil && len(addr) > 0 {
			im.url = "http://" + string(addr) + "/" + filepath.Base(im.path)
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("httpserve did not start")
}

// write runs one write of src to a fresh simulated card.
func write(bin, src, dir string, im *image, speed string) (sample, error) {
	card := filepath.Join(dir, "card.img")
	os.Remove(card)
	target := fmt.Sprintf("sim:%s?size=%dMiB", card, im.mib+128)
	if speed != "" {
		target += "&speed=" + speed
	}
	srv0 := procCPU(im.server)
	cmd := exec.Command(bin, "write", "--yes", "--no-verify", src, target)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t := time.Now()
	err := cmd.Run()
	wall := time.Since(t).Seconds()
	if err != nil {
		return sample{}, fmt.Errorf("%s write %s: %w\n%s", bin, src, err, stderr.String())
	}
	ps := cmd.ProcessState
	return sample{wall: wall, cpu: (ps.UserTime() + ps.SystemTime()).Seconds(), server: procCPU(im.server) - srv0}, nil
}

// download reads url with usbflash's own reader (and its read-ahead)
// into io.Discard: the seconds it took.
func download(url string) (float64, error) {
	t := time.Now()
	b, err := httpsrc.New(httpsrc.Options{}).Open(context.Background(), url)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	b.ReadAhead()
	if _, err := io.Copy(io.Discard, b); err != nil {
		return 0, err
	}
	return time.Since(t).Seconds(), nil
}

// curlDownload is curl's time for the same.
func curlDownload(url string) (float64, error) {
	t := time.Now()
	if err := exec.Command("curl", "-sf", "-o", "/dev/null", url).Run(); err != nil {
		return 0, err
	}
	return time.Since(t).Seconds(), nil
}

// procCPU is a running process's CPU seconds so far (Linux), 0 elsewhere.
func procCPU(cmd *exec.Cmd) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which ends with ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100 // USER_HZ
}

func wallOf(s sample) float64   { return s.wall }
func cpuOf(s sample) float64    { return s.cpu }
func serverOf(s sample) float64 { return s.server }

func median(s []sample, f func(sample) float64) float64 {
	v := make([]float64, len(s))
	for i, x := range s {
		v[i] = f(x)
	}
	return medianOf(v)
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func cond(ok bool, a, b string) string {
	if ok {
		return a
	}
	return b
}

func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
