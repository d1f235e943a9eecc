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
		{"MBR", func(d []byte) { putMBR(d, part{0x0c, 8192, 4096}, part{0x83, 12288, 2048}) }, Partition{MBR, 8192 * bs, 4096 * bs}, nil},
		{"MBR first slot empty", func(d []byte) { putMBR(d, part{}, part{0x0c, 2048, 100}) }, Partition{MBR, 2048 * bs, 100 * bs}, nil},
		{"MBR extended skipped", func(d []byte) { putMBR(d, part{0x05, 2048, 100}, part{0x0e, 4096, 100}) }, Partition{MBR, 4096 * bs, 100 * bs}, nil},
		{"GPT", func(d []byte) { putGPT(d, bs, 1000, 5000) }, Partition{GPT, 34 * bs, (1000 - 34 + 1) * bs}, nil},
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
