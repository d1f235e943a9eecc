package image

import (
	"bytes"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/testimage"
)

// TestDisc: a disc image is told from its first 64 KiB, compressed or
// not, from a file or a stream: xorriso's El Torito image without an MBR
// (as Windows installer ISOs are) boots only from a disc; with
// -isohybrid-mbr it is a hybrid that boots from a stick; a disk image is
// no disc image.
func TestDisc(t *testing.T) {
	win := testimage.ISO(t, "CCCOMA_X64FRE_EN-US_DV9", false)
	hybrid := testimage.ISO(t, "DEBIAN 12", true)
	udf := make([]byte, 64<<10) // a UDF volume recognition sequence alone
	for i, id := range []string{"BEA01", "NSR03", "TEA01"} {
		copy(udf[(16+i)*2048+1:], id)
	}
	for _, tt := range []struct {
		name      string
		data      []byte
		ok        bool
		want      Disc
		discOnly  bool
		isWindows bool
	}{
		{"Windows-like ISO", win, true, Disc{ISO9660: true, ElTorito: true, VolumeID: "CCCOMA_X64FRE_EN-US_DV9"}, true, true},
		{"hybrid ISO", hybrid, true, Disc{ISO9660: true, ElTorito: true, Hybrid: true, VolumeID: "DEBIAN 12"}, false, false},
		{"UDF alone", udf, true, Disc{UDF: true}, false, false},
		{"a disk image", genOSImage(1<<20, 3), false, Disc{}, false, false},
	} {
		for _, format := range []string{"raw", "xz", "tar.gzip"} {
			data := testimage.Compress(t, format, tt.data)
			for _, how := range srcWaysIn {
				t.Run(tt.name+"/"+format+"/"+how, func(t *testing.T) {
					s, err := srcOpen(t, data, how)
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					d, ok := s.Disc()
					if ok != tt.ok || d != tt.want || d.BootsOnlyFromDisc() != tt.discOnly || d.Windows() != tt.isWindows {
						t.Errorf("Disc() = %+v, %v; want %+v, %v (disc only %v, Windows %v)", d, ok, tt.want, tt.ok, tt.discOnly, tt.isWindows)
					}
					// The bytes read to tell are handed back: the image reads whole.
					var b bytes.Buffer
					if _, err := b.ReadFrom(s); err != nil || !bytes.Equal(b.Bytes(), tt.data) {
						t.Errorf("read %d bytes (%v), want the image's %d", b.Len(), err, len(tt.data))
					}
				})
			}
		}
	}
}
