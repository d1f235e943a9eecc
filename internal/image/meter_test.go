package image

import (
	"io"
	"sync"
	"testing"
)

// TestSourceProgressCounts: for every format and way in, DecodedRead is
// exactly the image bytes Read has returned, CompressedRead never goes
// backwards nor past the input, and at the end they are the image's and
// the input's sizes. Polled from another goroutine as progress is (run
// with -race).
func TestSourceProgressCounts(t *testing.T) {
	img := genOSImage(3<<20, 8)
	xzT2 := func() []byte {
		srcHaveCLI(t, "xz")
		return srcRunCLI(t, img, "xz", "-c", "-3", "-T2", "--block-size=512KiB")
	}
	for _, tt := range []struct {
		name string
		enc  func() []byte
		ways []string
	}{
		{"raw", func() []byte { return img }, srcWaysIn},
		{"gzip", func() []byte { return srcCompress(t, srcCodecs[0], img) }, srcWaysIn},
		{"xz single block", func() []byte { return srcCompress(t, srcCodecs[1], img) }, srcWaysIn},
		{"xz parallel", xzT2, srcWaysIn},
		{"zstd", func() []byte { return srcCompress(t, srcCodecs[2], img) }, srcWaysIn},
		{"bzip2", func() []byte { return srcCompress(t, srcCodecs[3], img) }, srcWaysIn},
		{"zip", func() []byte { return srcZip(t, 8, "os.img", img, "README.txt", []byte("read me")) }, []string{"file", "seekable"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			enc := tt.enc()
			for _, how := range tt.ways {
				s, err := srcOpen(t, enc, how)
				if err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				done := make(chan struct{})
				var backwards, past bool
				wg.Go(func() {
					var last int64
					for {
						select {
						case <-done:
							return
						default:
						}
						c := s.CompressedRead()
						backwards = backwards || c < last || s.DecodedRead() > int64(len(img))
						past = past || c > int64(len(enc))
						last = c
					}
				})
				buf := make([]byte, 100<<10)
				var got int64
				for {
					n, err := s.Read(buf)
					got += int64(n)
					if d := s.DecodedRead(); d != got {
						t.Fatalf("%s: DecodedRead %d after %d bytes read", how, d, got)
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("%s: %v", how, err)
					}
				}
				close(done)
				wg.Wait()
				if backwards || past {
					t.Errorf("%s: CompressedRead went backwards (%v) or past the input (%v)", how, backwards, past)
				}
				if got != int64(len(img)) || s.CompressedRead() != int64(len(enc)) {
					t.Errorf("%s: at the end DecodedRead %d, CompressedRead %d; want %d and %d",
						how, s.DecodedRead(), s.CompressedRead(), len(img), len(enc))
				}
				s.Close()
			}
		})
	}
}
