package session

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// progressWatch releases a paused server once a note shows the download
// of the bytes the server sent before its pause.
type progressWatch struct {
	at     int64 // the bytes the server sent before its pause
	once   sync.Once
	resume chan struct{}
	mu     sync.Mutex
	seen   bool
}

func (w *progressWatch) Observe(e Event) {
	n, ok := e.(Note)
	if !ok || !strings.HasPrefix(n.Message, "Downloading ") || !strings.Contains(n.Message, units.FormatBytes(w.at)+" of ") {
		return
	}
	w.mu.Lock()
	w.seen = true
	w.mu.Unlock()
	w.once.Do(func() { close(w.resume) })
}

// TestRunURLProgressBeforeFirstBlock: an xz made by xz -T from a URL,
// whose first block is decoded only once it has arrived whole, says its
// download while that block arrives, before the image's first bytes (the
// server holds the rest of the block until it has).
func TestRunURLProgressBeforeFirstBlock(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20, 56)
	cmd := exec.Command("xz", "-c", "-T2", "--block-size=1MiB")
	cmd.Stdin = bytes.NewReader(img)
	file, err := cmd.Output()
	if err != nil {
		t.Fatalf("xz: %v", err)
	}
	w := &progressWatch{at: 300000, resume: make(chan struct{})}
	srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"t1"`}, map[int]flakyhttp.Fault{0: {PauseAt: w.at, Resume: w.resume}})
	srv.Path = "/os.img.xz"
	ts := httptest.NewServer(srv)
	defer ts.Close()
	go func() {
		// Not a timing: a write that never shows the download would
		// otherwise wait for ever.
		time.Sleep(30 * time.Second)
		w.once.Do(func() { close(w.resume) })
	}()
	card, spec := newSimCard(t)
	if _, err := Run(context.Background(), Config{Image: image.Ref{Path: ts.URL + "/os.img.xz", HTTP: instantHTTP()}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: w}}, []drive.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(card)
	if !bytes.Equal(got[:len(img)], img) {
		t.Fatal("the card does not hold the image")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen {
		t.Error("no progress showed the download before the first block was written")
	}
}
