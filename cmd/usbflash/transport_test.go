package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/ui/readerinfo"
)

// transportChosen: --transport picks Bulk-Only or UAS for a sim reader that
// offers both; a UAS-only one is written byte for byte over UAS, and
// refused Bulk-Only; the device event and info say which.
func transportChosen(t *testing.T) {
	img := testImage(3<<20 + 512)
	image := writeFile(t, "os.img", img)
	cases := []struct {
		name, opts, flag string
		transport        string
		streams          float64
		code             int
		why              bool // Bulk-Only though UAS is offered: the device event and info say why
	}{
		{name: "UAS only, streams", opts: "uas=only&streams=16", flag: "auto", transport: "UAS", streams: 16},
		{name: "UAS only, high speed", opts: "uas=only", flag: "auto", transport: "UAS"},
		{name: "both: auto takes BOT", opts: "uas=both&streams=4", flag: "auto", transport: "BOT", why: true},
		{name: "both: uas forced", opts: "uas=both&streams=4", flag: "uas", transport: "UAS", streams: 4},
		{name: "both: bot forced", opts: "uas=both&streams=4", flag: "bot", transport: "BOT"},
		{name: "BOT only", opts: "serial=X", flag: "auto", transport: "BOT"},
		{name: "UAS only, bot forced", opts: "uas=only", flag: "bot", code: exitUsage},
		{name: "BOT only, uas forced", opts: "serial=X", flag: "uas", code: exitUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			card := filepath.Join(t.TempDir(), "card.img")
			target := "sim:" + card + "?size=4MiB&" + c.opts
			r := runCLI(t, "write", "--yes", "--json", "--transport", c.flag, image, target)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d: %s", r.code, c.code, r.stderr)
			}
			if c.code != exitOK {
				if !strings.Contains(r.stdout+r.stderr, "--transport") {
					t.Errorf("refusal does not name --transport: %s %s", r.stdout, r.stderr)
				}
				return
			}
			d := lastEvent(t, r.stdout, "device")
			if d["transport"] != c.transport || (d["uas_streams"] != nil && d["uas_streams"] != c.streams) || (c.streams > 0) != (d["uas_streams"] != nil) {
				t.Errorf("device event %v, want transport %s, %v streams", d, c.transport, c.streams)
			}
			if (d["transport_why"] != nil) != c.why || d["queue_depth"] != float64(1) {
				t.Errorf("device event %v: want queue depth 1, transport_why given %v", d, c.why)
			}
			got, err := os.ReadFile(card)
			if err != nil || !bytes.Equal(got[:len(img)], img) {
				t.Fatalf("card differs from the image (%v)", err)
			}
			r = runCLI(t, "info", "--json", "--transport", c.flag, "sim:"+card+"?"+c.opts)
			var rep readerinfo.Target
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.LUN == nil || rep.LUN.Transport != c.transport || rep.LUN.UASStreams != int(c.streams) || (rep.LUN.TransportWhy != "") != c.why {
				t.Errorf("info: %v, %+v", err, rep.LUN)
			}
		})
	}
	for _, bad := range [][]string{{"--transport", "scsi"}, {"--queue-depth", "0"}} {
		args := append([]string{"info"}, bad...)
		if r := runCLI(t, append(args, "sim:"+filepath.Join(t.TempDir(), "c.img")+"?size=1MiB")...); r.code != exitUsage || !strings.Contains(r.stderr, bad[0]) {
			t.Errorf("%v: exit %d, %s", bad, r.code, r.stderr)
		}
	}
	// --queue-depth reaches the reader: info says it.
	card := filepath.Join(t.TempDir(), "q.img")
	r := runCLI(t, "info", "--json", "--queue-depth", "2", "sim:"+card+"?size=1MiB&uas=only&streams=16")
	var rep readerinfo.Target
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.LUN == nil || rep.LUN.QueueDepth != 2 {
		t.Errorf("info --queue-depth 2: %v, %+v", err, rep.LUN)
	}
}

// queueDepthSays: --queue-depth that does nothing on a
// reader, or less than it asks, says so and why: Bulk-Only (one command
// at a time), a UAS reader's streams, the write's buffers, several cards
// written from one decode; one that is used as asked says nothing.
func queueDepthSays(t *testing.T) {
	image := writeFile(t, "os.img", testImage(3<<20+512))
	for _, tt := range []struct {
		name  string
		cards []string // the cards' sim options
		flags []string
		said  string // "": no note of --queue-depth
	}{
		{name: "Bulk-Only", cards: []string{"size=4MiB"}, flags: []string{"--queue-depth", "4"},
			said: "--queue-depth 4 does nothing on this reader: Bulk-Only Transport runs one command at a time"},
		{name: "Bulk-Only, depth 1", cards: []string{"size=4MiB"}, flags: []string{"--queue-depth", "1"}},
		{name: "Bulk-Only, the default", cards: []string{"size=4MiB"}},
		{name: "UAS, fewer streams", cards: []string{"size=4MiB&uas=only&streams=4"}, flags: []string{"--queue-depth", "8"},
			said: "--queue-depth 8 is cut to 3 on this reader: it has 4 bulk streams, one of them kept for task management"},
		{name: "UAS without streams, more than its tags", cards: []string{"size=4MiB&uas=only"}, flags: []string{"--queue-depth", "40"},
			said: "--queue-depth 40 is cut to 31: a UAS host keeps one of its 32 tags for task management"},
		{name: "UAS, the buffers leave fewer", cards: []string{"size=4MiB&uas=only&streams=16"}, flags: []string{"--queue-depth", "8", "--buffers", "3", "--transfer-size", "256KiB"},
			said: "--queue-depth 8: the write kept 2 full transfers in flight, as many as its 3 buffers leave"},
		{name: "UAS, as asked", cards: []string{"size=4MiB&uas=only&streams=16"}, flags: []string{"--queue-depth", "4", "--buffers", "8", "--transfer-size", "256KiB"}},
		{name: "UAS, several cards", cards: []string{"size=4MiB&uas=only&streams=16", "size=4MiB&uas=only&streams=16"}, flags: []string{"--queue-depth", "4"},
			said: "--queue-depth 4 is not used by the write of several cards"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"write", "--yes", image}, tt.flags...)
			for i, o := range tt.cards {
				args = append(args, "sim:"+filepath.Join(t.TempDir(), fmt.Sprintf("card%d.img", i))+"?"+o)
			}
			r := runCLI(t, args...)
			out := r.stdout + r.stderr
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, out)
			}
			if tt.said == "" {
				if strings.Contains(out, "--queue-depth") {
					t.Errorf("a note of --queue-depth where it does what it asks:\n%s", out)
				}
				return
			}
			if !strings.Contains(out, tt.said) {
				t.Errorf("output lacks %q:\n%s", tt.said, out)
			}
		})
	}
}

// TestTransport: --transport and --queue-depth, and what they say.
func TestTransport(t *testing.T) {
	parallel(t,
		subtest{"chosen", transportChosen},
		subtest{"queue depth", queueDepthSays},
	)
}
