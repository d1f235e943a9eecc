package image

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// mappedImage writes img to a temporary file and maps it; both are
// closed when the test ends.
func mappedImage(t *testing.T, img []byte) (string, *mappedFile) {
	t.Helper()
	p := tempImage(t, img)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m := mapFile(f, int64(len(img)))
	if m == nil {
		t.Fatal("a regular file was not mapped")
	}
	t.Cleanup(func() { m.Close() })
	return p, m
}

// TestMappedFileReadAt: the mapping reads what read(2) reads, at every
// kind of offset, and a file truncated under it ends where the file now
// ends instead of faulting the process.
func TestMappedFileReadAt(t *testing.T) {
	img := genOSImage(3<<20+123, 7)
	p, m := mappedImage(t, img)
	size := int64(len(img))
	for _, tt := range []struct {
		name    string
		off     int64
		n       int
		want    int
		wantEOF bool
	}{
		{"start", 0, 4096, 4096, false},
		{"unaligned inside", 12345, 1 << 20, 1 << 20, false},
		{"across the end", size - 100, 4096, 100, true},
		{"exactly the rest", size - 4096, 4096, 4096, false},
		{"at the end", size, 10, 0, true},
		{"past the end", size + 1<<20, 10, 0, true},
	} {
		p := make([]byte, tt.n)
		n, err := m.ReadAt(p, tt.off)
		if n != tt.want || (err == io.EOF) != tt.wantEOF || (err != nil && err != io.EOF) {
			t.Errorf("%s: ReadAt(%d bytes at %d) = %d, %v; want %d, EOF %v", tt.name, tt.n, tt.off, n, err, tt.want, tt.wantEOF)
			continue
		}
		if n > 0 && !bytes.Equal(p[:n], img[tt.off:tt.off+int64(n)]) {
			t.Errorf("%s: wrong bytes", tt.name)
		}
	}
	if _, err := m.ReadAt(make([]byte, 1), -1); err == nil {
		t.Error("a negative offset read")
	}

	// Truncated to 1 MiB + 10 under the mapping: what lies past the new end
	// faults; the read stops at the new end, as read(2) does.
	if err := os.Truncate(p, 1<<20+10); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	n, err := m.ReadAt(buf, 1<<19)
	if n != 1<<19+10 || err != io.EOF || !bytes.Equal(buf[:n], img[1<<19:1<<20+10]) {
		t.Errorf("after truncation: ReadAt = %d, %v; want %d bytes and EOF", n, err, 1<<19+10)
	}
	if n, err := m.ReadAt(buf, 2<<20); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("after truncation, past the new end: ReadAt = %d, %v; want 0, EOF", n, err)
	}
}

// TestOpenMapsRegularFiles: a named regular image is read through the
// mapping, and its Close unmaps it.
func TestOpenMapsRegularFiles(t *testing.T) {
	img := genOSImage(1<<20, 3)
	p := tempImage(t, img)
	s, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(s)
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if len(s.closers) != 2 {
		t.Errorf("%d closers, want the file's and the mapping's", len(s.closers))
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}

// TestMappedFileUnreadablePage: a page that faults though the file still
// reaches past it (the kernel could not read it from the disk: made here
// by a file truncated under the mapping whose size still reads as before)
// is an error, not an early end, and a Source names the file's offset
// with it, once.
func TestMappedFileUnreadablePage(t *testing.T) {
	img := genOSImage(3<<20, 5)
	p, m := mappedImage(t, img)
	if err := os.Truncate(p, 1<<20); err != nil {
		t.Fatal(err)
	}
	m.size = func() (int64, error) { return int64(len(img)), nil } // what a disk error looks like
	buf := make([]byte, 1<<20)
	if n, err := m.ReadAt(buf, 1<<20+4096); n != 0 || !errors.Is(err, errMappedFault) {
		t.Fatalf("ReadAt past the lost pages = %d, %v; want 0, %v", n, err, errMappedFault)
	}
	// A read that starts before them gets the good bytes, then the error.
	if n, err := m.ReadAt(buf, 1<<20-8192); n != 8192 || !errors.Is(err, errMappedFault) || !bytes.Equal(buf[:n], img[1<<20-8192:1<<20]) {
		t.Fatalf("ReadAt across the lost pages = %d, %v; want the 8192 bytes before them and %v", n, err, errMappedFault)
	}
	// Before the lost pages the mapping still reads.
	if n, err := m.ReadAt(buf[:4096], 0); n != 4096 || err != nil || !bytes.Equal(buf[:4096], img[:4096]) {
		t.Fatalf("ReadAt(0) = %d, %v", n, err)
	}

	s, err := newSource(bytes.NewReader(nil), m, int64(len(img)), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(s)
	var ie *Error
	if !errors.As(err, &ie) || ie.Kind != ErrUnreadable || ie.Offset != 1<<20 {
		t.Fatalf("reading the image: %v; want an Unreadable error at byte %d", err, 1<<20)
	}
	msg := err.Error()
	if !strings.Contains(msg, errMappedFault.Error()) || strings.Count(msg, "1048576") != 1 {
		t.Errorf("the error should say what went wrong and name the offset once: %q", msg)
	}
}

// TestMappedFileDropsBehindReader: a reader going through the image leaves
// at most a dropChunk and its last read mapped in this process, so Close
// has little to unmap; the bytes read again after the drop are the
// image's. Without the drop the whole image stays mapped (checked first,
// so the measurement itself is known to work).
func TestMappedFileDropsBehindReader(t *testing.T) {
	const size = 2*dropChunk + 8<<20
	img := genOSImage(size, 11)
	for _, drop := range []bool{false, true} {
		_, m := mappedImage(t, img)
		if !drop {
			m.drop = nil
		}
		buf := make([]byte, 1<<20)
		for off := int64(0); off < size; off += int64(len(buf)) {
			if n, err := m.ReadAt(buf, off); n != len(buf) || (err != nil && err != io.EOF) {
				t.Fatalf("ReadAt at %d: %d, %v", off, n, err)
			}
		}
		rss := mappedRSS(t, m.data)
		if drop && rss > dropChunk+int64(len(buf)) {
			t.Errorf("after reading %d MiB, %d KiB stay mapped; want at most %d KiB", size>>20, rss>>10, (dropChunk+len(buf))>>10)
		}
		if !drop && rss < size {
			// Under user-mode emulation smaps may not show them.
			t.Skipf("without dropping, only %d KiB of the %d MiB read show as mapped: this /proc/self/smaps does not see the pages", rss>>10, size>>20)
		}
		if drop {
			if n, err := m.ReadAt(buf, 3<<20+5); n != len(buf) || err != nil || !bytes.Equal(buf, img[3<<20+5:4<<20+5]) {
				t.Errorf("reading dropped pages again: %d, %v, same bytes %v", n, err, bytes.Equal(buf, img[3<<20+5:4<<20+5]))
			}
		}
	}
}

// mappedRSS is how much of the mapping that starts at data's first byte
// is in this process's page tables (its Rss in /proc/self/smaps).
func mappedRSS(t *testing.T, data []byte) int64 {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(unsafe.SliceData(data))))
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = strings.HasPrefix(f[0], start)
			continue
		}
		if kb, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			var n int64
			if _, err := fmt.Sscanf(strings.TrimSpace(kb), "%d kB", &n); err != nil {
				t.Fatalf("smaps line %q: %v", line, err)
			}
			return n << 10
		}
	}
	// qemu-user (make test-arm) shows the emulator's own mappings.
	t.Skipf("no mapping at %s in /proc/self/smaps: it does not show this process's memory", start)
	return 0
}
