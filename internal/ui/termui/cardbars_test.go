package termui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/pipeline"
)

// TestCardBarsDownload: several cards written from a URL show the
// download beside the cards, on the line a log gets and as a download event
// before the cards' card_progress events in JSON.
func TestCardBarsDownload(t *testing.T) {
	t.Parallel()
	p := session.Progress{Phase: pipeline.PhaseWrite, Done: 2e6, Total: 4e6,
		Cards:    []session.CardProgress{{Card: "sim:a", Phase: pipeline.PhaseWrite, Done: 2e6, Total: 4e6}, {Card: "sim:b", Phase: pipeline.PhaseWrite, Done: 1e6, Total: 4e6}},
		Download: &session.Download{URL: "http://h/os.img.xz", Bytes: 1e6, Total: 2e6, Rate: 5e5, Bound: session.BoundDownload}}
	for _, tc := range []struct {
		name string
		json bool
		want string // in the output, in order
	}{
		{"a line", false, "sim:a: write 2.00 MB, sim:b: write 1.00 MB (of 4.00 MB) | download: 1.00 MB of 2.00 MB, 0.5 MB/s, sets the pace\n"},
		{"JSON", true, `"url":"http://h/os.img.xz","bytes":1000000,"total":2000000,"rate":500000,"resumes":0,"bound":"download"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{time.Unix(1e9, 0)}
			var out, errOut bytes.Buffer
			b := NewCardBars(New(&out, &errOut, Options{JSON: tc.json, Now: clock.now, LineEvery: time.Second}), []string{"sim:a", "sim:b"})
			clock.t = clock.t.Add(2 * time.Second)
			b.Update(p)
			got := errOut.String()
			if tc.json {
				got = out.String()
				if i, j := strings.Index(got, `"event":"download"`), strings.Index(got, `"event":"card_progress"`); i < 0 || j < i {
					t.Errorf("want the download event before the cards':\n%s", got)
				}
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got\n%s\nwant %q", got, tc.want)
			}
		})
	}
}
