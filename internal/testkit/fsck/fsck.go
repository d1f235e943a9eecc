// Package fsck is for tests of what lays a card out (format): the card's
// file system checked by its own checker, as a person's computer would.
package fsck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/lib/parttable"
)

// Card runs the file system's checker (fsck.fat -n for "FAT32",
// fsck.exfat -n for "exFAT") over the card file's one partition, copied
// out of the sparse card (the checkers take no offset); the test fails
// when it finds fault, or when it is not installed.
func Card(t testing.TB, card, fs string) {
	t.Helper()
	c, err := os.Open(card)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, _ := c.Stat()
	read := func(off int64, p []byte) error { _, err := c.ReadAt(p, off); return err }
	p, err := parttable.First(read, 512, st.Size())
	if err != nil {
		t.Fatalf("the card's partition table: %v", err)
	}
	part := filepath.Join(t.TempDir(), "part.img")
	out, err := os.Create(part)
	if err != nil {
		t.Fatal(err)
	}
	out.Truncate(p.Size)
	buf := make([]byte, 1<<20)
	for off := int64(0); off < min(p.Size, 128<<20); off += int64(len(buf)) {
		n, _ := c.ReadAt(buf, p.Start+off)
		if !bytes.Equal(buf[:n], make([]byte, n)) {
			out.WriteAt(buf[:n], off)
		}
	}
	out.Close()
	tool := map[string]string{"FAT32": "fsck.fat", "exFAT": "fsck.exfat"}[fs]
	path := "/usr/sbin/" + tool
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not installed (apt-get install dosfstools exfatprogs): %v", tool, err)
	}
	if b, err := exec.Command(path, "-n", part).CombinedOutput(); err != nil {
		t.Fatalf("%s -n: %v\n%s", tool, err, b)
	}
}
