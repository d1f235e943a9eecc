package pipeline

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// MemoryAligned is the kind of memory the engine allocates itself when the
// device offers none: page-aligned Go memory, which WriteBlocks may still
// have to copy.
const MemoryAligned = "page-aligned"

// memory is the buffers of one Write or Verify, allocated once for the
// whole call, and where they came from.
type memory struct {
	bufs [][]byte
	kind string
	free func() // nil for Go memory
}

// release gives device memory back. The caller makes sure nothing uses the
// buffers any more (the producer has stopped).
func (m *memory) release() {
	if m.free != nil {
		m.free()
		m.free = nil
	}
}

// allocBuffers gets count buffers of size bytes: from the device when it is
// a BufferAllocator, so what the filler writes is what the device sends,
// else aligned Go memory.
func allocBuffers(dev blockdev.Device, name string, count, size int) (memory, error) {
	a, ok := dev.(blockdev.BufferAllocator)
	if !ok {
		return memory{bufs: alignedBuffers(count, size), kind: MemoryAligned}, nil
	}
	bufs, kind, free, err := a.AllocBuffers(count, size)
	if err != nil {
		return memory{}, fmt.Errorf("allocating %d buffers of %d bytes on %s: %w", count, size, blockdev.Name(dev, name), err)
	}
	m := memory{bufs: make([][]byte, count), kind: kind, free: free}
	if len(bufs) != count {
		m.release()
		return memory{}, fmt.Errorf("%s gave %d buffers, asked for %d", blockdev.Name(dev, name), len(bufs), count)
	}
	for i, b := range bufs {
		if len(b) < size {
			m.release()
			return memory{}, fmt.Errorf("%s gave a buffer of %d bytes, asked for %d", blockdev.Name(dev, name), len(b), size)
		}
		m.bufs[i] = b[:size:size]
	}
	return m, nil
}

// alignedBuffers carves count buffers of size bytes out of one allocation,
// each starting on a page boundary.
func alignedBuffers(count, size int) [][]byte {
	stride := roundUp(size, aligned.Alignment())
	mem := aligned.Bytes(stride * count)
	bufs := make([][]byte, count)
	for i := range bufs {
		bufs[i] = mem[i*stride : i*stride+size : i*stride+size]
	}
	return bufs
}
