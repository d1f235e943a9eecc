package sessionview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/usbms"
)

// testWords stand for the command line's: a flag for every setting, one
// piece of advice for every notice.
func testWords() Words {
	return Words{
		Flag: func(s failure.Setting) string { return "--" + strings.ReplaceAll(string(s), " ", "-") },
		NoticeAdvice: func(n *observe.Notice) string {
			return map[bool]string{true: "advice", false: ""}[n != nil && n.Kind == observe.NoticeTransferCap]
		},
		InUseAdvice: func(uses []drive.Use) string { return "unmount it" },
	}
}

// events is what rep printed as JSON.
func events(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		evs = append(evs, m)
	}
	return evs
}

// TestNotes: what the presenters say of a reader's notices and of a disk
// in use: the setting a notice names told by its flag, the advice as the
// note's hint, a backup of a disk in use warned of with what frees it.
func TestNotes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		event     session.Event
		msg, hint string
	}{
		{"a setting", session.Note{Message: "queue depth 4 does nothing on this reader", Notice: &observe.Notice{Kind: observe.NoticeSetting, Setting: usbms.SettingQueueDepth}},
			"--queue-depth 4 does nothing on this reader", ""},
		{"advice", session.Note{Message: "commands made smaller", Notice: &observe.Notice{Kind: observe.NoticeTransferCap, Cap: 1 << 20}}, "commands made smaller", "advice"},
		{"a disk in use", session.InUse{Err: &drive.Error{Msg: "/dev/loop7 is in use: /dev/loop7 is mounted on /mnt", Err: drive.ErrInUse, Uses: []drive.Use{drive.UseMounted}}},
			"/dev/loop7 is in use: /dev/loop7 is mounted on /mnt: what is read may change meanwhile, and the backup be inconsistent; unmount it first for a consistent one", ""},
	} {
		var out bytes.Buffer
		Backup(termui.New(&out, &out, termui.Options{JSON: true}), testWords()).Observe(tc.event)
		e := events(t, &out)[0]
		if hint, _ := e["hint"].(string); e["event"] != "note" || e["message"] != tc.msg || hint != tc.hint {
			t.Errorf("%s: %v, want the note %q (hint %q)", tc.name, e, tc.msg, tc.hint)
		}
	}
}

// TestWriteOfOneCard: a one-card write's summary in words that agree with
// its numbers, a target without a card to eject said in the command
// line's words (and as a note), and progress: decoded bytes, and the
// compressed file's only when it has them.
func TestWriteOfOneCard(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	p := NewWrite(termui.New(&out, &errOut, termui.Options{}), testWords(), jsonevents.CommandWrite, false, false, true)
	no := false
	p.Observe(session.CardDone{Outcome: &session.Outcome{Target: "file:c.img",
		Write: pipeline.WriteResult{Bytes: 4096, Transfers: 1, Elapsed: time.Millisecond}, Ejected: &no,
		EjectErr: &drive.NotEjectableError{What: "a file: target"}}})
	if err := p.Finish(nil, nil); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "Wrote 4.10 kB in 1ms (4.1 MB/s), 1 command\n") ||
		!strings.Contains(s, "Not ejected: --eject does nothing for a file: target") {
		t.Errorf("summary:\n%s", s)
	}
	for _, tc := range []struct {
		p    session.Progress
		want string
	}{
		{session.Progress{Phase: pipeline.PhaseWrite, Done: 3 << 20, Total: 3 << 20, CompressedDone: -1, CompressedTotal: -1}, `"done":3145728,"total":3145728,`},
		{session.Progress{Phase: pipeline.PhaseWrite, Done: 3 << 20, Total: 3 << 20, CompressedDone: 1000, CompressedTotal: 1200}, `"compressed_done":1000,"compressed_total":1200`},
		{session.Progress{Phase: pipeline.PhaseWrite, Done: 3 << 20, Total: -1, CompressedDone: 1000, CompressedTotal: -1}, `"compressed_done":1000,`},
	} {
		var js bytes.Buffer
		Card(termui.New(&js, &js, termui.Options{JSON: true}), testWords(), tc.p)
		if s := js.String(); !strings.Contains(s, tc.want) || tc.p.CompressedDone < 0 && strings.Contains(s, "compressed") ||
			tc.p.CompressedTotal < 0 && strings.Contains(s, "compressed_total") {
			t.Errorf("%+v: %s, want %s", tc.p, s, tc.want)
		}
	}
}
