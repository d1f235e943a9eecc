package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/testtargets"
)

// TestDiskTargetCommands drives disk: targets through the commands on
// loop devices, as a person would a card reader's disk: write asks (here
// --yes), writes, reads back and exits 0, the disk holding the image;
// verify and info read it; a mounted disk is refused (exit 3) and left as
// it was; a file is no disk: target (exit 2).
func TestDiskTargetCommands(t *testing.T) {
	img := testImage(3<<20 + 4096)
	image := writeFile(t, "os.img", img)
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := runApp(context.Background(), &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}, args)
		return code, out.String() + errOut.String()
	}
	t.Run("a free disk", func(t *testing.T) {
		t.Parallel()
		dev := testtargets.LoopDevice(t, 8<<20)
		if code, out := run("write", "--yes", "--quiet", image, "disk:"+dev); code != exitOK {
			t.Fatalf("write: exit %d\n%s", code, out)
		}
		f, err := os.Open(dev)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(img))
		_, err = io.ReadFull(f, got)
		f.Close()
		if err != nil || !bytes.Equal(got, img) {
			t.Fatalf("the disk does not hold the image (%v)", err)
		}
		if code, out := run("verify", "--quiet", image, "disk:"+dev); code != exitOK {
			t.Errorf("verify: exit %d\n%s", code, out)
		}
		code, out := run("info", "--json", "disk:"+dev)
		var info struct {
			Target string
			Disk   *struct {
				Node      string
				Bytes     int64
				DirectIO  bool `json:"direct_io"`
				Removable bool
			}
		}
		if code != exitOK || json.Unmarshal([]byte(out), &info) != nil || info.Disk == nil || info.Target != "disk:"+dev ||
			info.Disk.Node != dev || info.Disk.Bytes != 8<<20 || !info.Disk.DirectIO {
			t.Errorf("info --json: exit %d\n%s", code, out)
		}
	})
	t.Run("mounted", func(t *testing.T) {
		t.Parallel()
		dev, mnt := testtargets.MountedLoop(t, 16<<20)
		before := readHead(t, dev)
		code, out := run("write", "--yes", "--quiet", image, "disk:"+dev)
		if code != exitRefused || !strings.Contains(out, dev+" is mounted on "+mnt) || !strings.Contains(out, "nmount it first, or pass --force") {
			t.Errorf("write to a mounted disk: exit %d\n%s", code, out)
		}
		if !bytes.Equal(readHead(t, dev), before) {
			t.Error("the mounted disk was written")
		}
	})
	t.Run("a file", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "card.img")
		if err := os.WriteFile(file, make([]byte, 8<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out := run("write", "--yes", "--quiet", image, "disk:"+file); code != exitUsage || !strings.Contains(out, "is not a disk") {
			t.Errorf("write to disk:FILE: exit %d\n%s", code, out)
		}
	})
}

func readHead(t *testing.T, dev string) []byte {
	t.Helper()
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1<<20)
	if _, err := io.ReadFull(f, b); err != nil {
		t.Fatal(err)
	}
	return b
}
