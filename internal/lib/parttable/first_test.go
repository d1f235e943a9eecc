package parttable

import (
	"errors"
	"testing"
)

func TestFirst(t *testing.T) {
	const bs = 512
	tests := []struct {
		name string
		make func(d []byte)
		want Partition
		err  error
	}{
		{"MBR", func(d []byte) { putMBR(d, part{0x0c, 8192, 4096}, part{0x83, 12288, 2048}) }, Partition{Kind: MBR, Start: 8192 * bs, Size: 4096 * bs, Number: 1, MBRType: 0x0c}, nil},
		{"MBR first slot empty", func(d []byte) { putMBR(d, part{}, part{0x0c, 2048, 100}) }, Partition{Kind: MBR, Start: 2048 * bs, Size: 100 * bs, Number: 2, MBRType: 0x0c}, nil},
		{"MBR extended skipped", func(d []byte) { putMBR(d, part{0x05, 2048, 100}, part{0x0e, 4096, 100}) }, Partition{Kind: MBR, Start: 4096 * bs, Size: 100 * bs, Number: 2, MBRType: 0x0e}, nil},
		{"GPT", func(d []byte) { putGPT(d, bs, 1000, 5000) }, Partition{Kind: GPT, Start: 34 * bs, Size: (1000 - 34 + 1) * bs, Number: 1, TypeGUID: [16]byte{0xAF}}, nil},
		{"no table", func(d []byte) {}, Partition{}, ErrNoPartition},
		{"damaged", func(d []byte) { putMBR(d, part{0x0c, 1 << 30, 100}) }, Partition{}, ErrDamaged},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := disk()
			tc.make(d)
			got, err := First(func(off int64, p []byte) error { copy(p, d[off:]); return nil }, bs, int64(len(d)))
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("First = %+v, %v; want %+v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestList: every partition in its table's order, with its number and
// type; an EFI System Partition told by its MBR type or its GPT type.
func TestList(t *testing.T) {
	const bs = 512
	d := disk()
	putMBR(d, part{0x83, 2048, 100}, part{0x05, 4096, 100}, part{0xEF, 8192, 200})
	parts, err := List(func(off int64, p []byte) error { copy(p, d[off:]); return nil }, bs, int64(len(d)))
	if err != nil || len(parts) != 2 || parts[0].Number != 1 || parts[0].MayBeFAT() || parts[1].Number != 3 || !parts[1].ESP() || !parts[1].MayBeFAT() ||
		parts[1].Type() != "MBR type 0xef" {
		t.Fatalf("List = %+v, %v", parts, err)
	}
	g := disk()
	putGPT(g, bs, 1000, 5000)
	copy(g[2*bs+128:], espGUID[:])
	sealGPT(g, bs)
	parts, err = List(func(off int64, p []byte) error { copy(p, g[off:]); return nil }, bs, int64(len(g)))
	if err != nil || len(parts) != 2 || parts[0].ESP() || !parts[1].ESP() || parts[1].Number != 2 ||
		parts[1].Type() != "GPT type C12A7328-F81F-11D2-BA4B-00A0C93EC93B" {
		t.Fatalf("List = %+v, %v", parts, err)
	}
}
