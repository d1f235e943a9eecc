package image

import (
	"errors"
	"io"
	"sync"
	"syscall"
)

// bounceSize is the most a bounced read moves at once.
const bounceSize = 1 << 20

// bounceReaderAt reads an image file into memory the kernel may refuse to
// read into directly. The engine hands a raw image's reads straight to the
// device's zero-copy buffers (usbfs mmap memory); a filesystem that moves
// file data by pinning the reader's pages (9p, FUSE, O_DIRECT paths) cannot
// pin those and fails with EFAULT. Such a read is done again through a
// buffer of our own, allocated on the first refusal, and copied: one copy
// only where the kernel leaves no choice.
type bounceReaderAt struct {
	ra io.ReaderAt

	mu  sync.Mutex // guards buf
	buf []byte
}

func (b *bounceReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.ra.ReadAt(p, off)
	if !errors.Is(err, syscall.EFAULT) {
		return n, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf == nil {
		b.buf = make([]byte, bounceSize)
	}
	for n < len(p) {
		m, err := b.ra.ReadAt(b.buf[:min(len(p)-n, len(b.buf))], off+int64(n))
		n += copy(p[n:], b.buf[:m])
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
