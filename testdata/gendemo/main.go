// Command gendemo makes testdata/demo.img, the image behind demo.img.xz:
//
//	go run ./testdata/gendemo > /tmp/demo.img
//	xz -T2 --block-size=8MiB -6 -c /tmp/demo.img > testdata/demo.img.xz
//
// xz -T2 makes four blocks, so the demo exercises the parallel decoder. The
// image embeds Go 1.26.8 sources and its compiler binary: another Go release
// makes a different (equally good) image.
package main

import (
	"encoding/binary"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
)

// A 32 MiB OS-like image: MBR with two partitions, text, binary code, zeros.
func main() {
	const size = 32 << 20
	img := make([]byte, size)
	// MBR: partition 1 FAT32 LBA at 8192 (4 MiB), 16 MiB; partition 2 Linux after it.
	mbr := img[:512]
	copy(mbr[0:], []byte("usbflash demo image"))
	binary.LittleEndian.PutUint32(mbr[440:], 0x75736266)
	p := mbr[446:]
	p[0], p[4] = 0x80, 0x0c
	binary.LittleEndian.PutUint32(p[8:], 8192)
	binary.LittleEndian.PutUint32(p[12:], 32768)
	p = mbr[462:]
	p[4] = 0x83
	binary.LittleEndian.PutUint32(p[8:], 40960)
	binary.LittleEndian.PutUint32(p[12:], size/512-40960)
	mbr[510], mbr[511] = 0x55, 0xaa
	// Text: Go's own sources, sorted so the image is the same on every run.
	var files []string
	filepath.Walk("/usr/local/go/src/net/http", func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && filepath.Ext(p) == ".go" {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	off := 4 << 20
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if off+len(b) > 14<<20 {
			break
		}
		off += copy(img[off:], b)
	}
	// Binary: the go tool itself (code-like), 6 MiB.
	b, _ := os.ReadFile("/usr/local/go/pkg/tool/linux_amd64/compile")
	copy(img[20<<20:26<<20], b)
	// Incompressible: 512 KiB of pseudo-random data.
	r := rand.New(rand.NewSource(1))
	r.Read(img[27<<20 : 27<<20+512<<10])
	// Odd tail so the image is not a multiple of the transfer size.
	os.Stdout.Write(img[:size-1000])
}
