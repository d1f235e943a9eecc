package parttable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
)

type part struct {
	typ          byte
	start, count uint32
}

// disk is an in-memory disk of 8 MiB.
func disk() []byte { return make([]byte, 8<<20) }

func putMBR(d []byte, parts ...part) {
	for i, p := range parts {
		e := d[446+16*i:]
		e[4] = p.typ
		binary.LittleEndian.PutUint32(e[8:], p.start)
		binary.LittleEndian.PutUint32(e[12:], p.count)
	}
	d[510], d[511] = 0x55, 0xAA
}

// putGPT writes a protective MBR and a primary GPT whose used entries end
// at the given last LBAs, with entries at LBA 2 and both CRC-32s right.
func putGPT(d []byte, bs int, lasts ...uint64) {
	putMBR(d, part{0xEE, 1, uint32(len(d)/bs - 1)})
	h := d[bs:]
	copy(h, "EFI PART")
	binary.LittleEndian.PutUint32(h[12:], 92)
	binary.LittleEndian.PutUint64(h[72:], 2)
	binary.LittleEndian.PutUint32(h[80:], 128)
	binary.LittleEndian.PutUint32(h[84:], 128)
	for i, last := range lasts {
		e := d[2*bs+128*i:]
		e[0] = 0xAF // a type GUID that is not zero
		binary.LittleEndian.PutUint64(e[32:], 34)
		binary.LittleEndian.PutUint64(e[40:], last)
	}
	sealGPT(d, bs)
}

// sealGPT computes the CRC-32s of the GPT at LBA 1 as they are now.
func sealGPT(d []byte, bs int) {
	h := d[bs:]
	lba := binary.LittleEndian.Uint64(h[72:])
	n := binary.LittleEndian.Uint32(h[80:]) * binary.LittleEndian.Uint32(h[84:])
	if end := lba*uint64(bs) + uint64(n); lba < uint64(len(d)/bs) && end <= uint64(len(d)) {
		binary.LittleEndian.PutUint32(h[88:], crc32.ChecksumIEEE(d[lba*uint64(bs):end]))
	}
	clear(h[16:20])
	binary.LittleEndian.PutUint32(h[16:], crc32.ChecksumIEEE(h[:92]))
}

// gptWith is a GPT with one field of its header changed, still sealed
// (off and v: the field's offset in the header and its new value).
func gptWith(off int, v uint64) func(d []byte) {
	return func(d []byte) {
		putGPT(d, 512, 2000)
		if off == 12 || off == 80 || off == 84 {
			binary.LittleEndian.PutUint32(d[512+off:], uint32(v))
		} else {
			binary.LittleEndian.PutUint64(d[512+off:], v)
		}
		sealGPT(d, 512)
	}
}

func TestEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		bs   int
		make func(d []byte)
		want Table
		err  error
	}{
		{"no table", 512, func([]byte) {}, Table{Kind: None}, nil},
		{"signature but no partitions", 512, func(d []byte) { putMBR(d) }, Table{Kind: None}, nil},
		{"MBR", 512, func(d []byte) { putMBR(d, part{0x0C, 2048, 4096}, part{0x83, 8192, 2048}) }, Table{MBR, (8192 + 2048) * 512}, nil},
		{"MBR out of order", 512, func(d []byte) { putMBR(d, part{0x83, 8192, 2048}, part{0x0C, 2048, 4096}) }, Table{MBR, (8192 + 2048) * 512}, nil},
		{"MBR extended", 512, func(d []byte) { putMBR(d, part{0x0C, 2048, 2048}, part{0x05, 4096, 8000}) }, Table{MBR, (4096 + 8000) * 512}, nil},
		{"MBR 4K blocks", 4096, func(d []byte) { putMBR(d, part{0x83, 256, 512}) }, Table{MBR, 768 * 4096}, nil},
		{"MBR past the end", 512, func(d []byte) { putMBR(d, part{0x83, 2048, 1 << 20}) }, Table{}, ErrDamaged},
		{"GPT", 512, func(d []byte) { putGPT(d, 512, 2000, 9000, 5000) }, Table{GPT, 9001 * 512}, nil},
		{"GPT 4K blocks", 4096, func(d []byte) { putGPT(d, 4096, 1000) }, Table{GPT, 1001 * 4096}, nil},
		{"GPT no header", 512, func(d []byte) { putMBR(d, part{0xEE, 1, 100}) }, Table{}, ErrDamaged},
		{"GPT past the end", 512, func(d []byte) { putGPT(d, 512, 1<<30) }, Table{}, ErrDamaged},
		{"GPT ending at a wrapping LBA", 512, func(d []byte) { putGPT(d, 512, 1<<63) }, Table{}, ErrDamaged},
		{"EFI PART then garbage", 512, func(d []byte) {
			putMBR(d, part{0xEE, 1, 100})
			copy(d[512:], "EFI PART")
			for i := 520; i < 1024; i++ {
				d[i] = byte(i*131 + 7)
			}
		}, Table{}, ErrDamaged},
		{"GPT header CRC wrong", 512, func(d []byte) { putGPT(d, 512, 2000); d[512+16]++ }, Table{}, ErrDamaged},
		{"GPT entries CRC wrong", 512, func(d []byte) { putGPT(d, 512, 2000); d[2*512+100]++ }, Table{}, ErrDamaged},
		{"GPT header size too small", 512, gptWith(12, 40), Table{}, ErrDamaged},
		{"GPT entries at a wrapping LBA", 512, gptWith(72, 1<<63), Table{}, ErrDamaged},
		{"GPT entries past the end", 512, gptWith(72, 8<<20/512-1), Table{}, ErrDamaged},
		{"GPT entries over the bound", 512, gptWith(80, 1<<16), Table{}, ErrDamaged},
		{"GPT entry size not 8-aligned", 512, gptWith(84, 130), Table{}, ErrDamaged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := disk()
			tc.make(d)
			read := func(off int64, p []byte) error {
				if off%int64(tc.bs) != 0 || len(p)%tc.bs != 0 || off+int64(len(p)) > int64(len(d)) {
					return fmt.Errorf("read of %d bytes at %d is not whole blocks on the disk", len(p), off)
				}
				copy(p, d[off:])
				return nil
			}
			got, err := End(read, tc.bs, int64(len(d)))
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("End = %+v, %v; want %+v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}
