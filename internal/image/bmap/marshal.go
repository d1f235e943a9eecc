package bmap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Marshal writes m as a format 2.0 map in bmaptool's layout, with SHA-256
// range checksums and the map's own checksum, which bmaptool checks before
// it uses a map. m.ChecksumType must be SHA256 and every range must carry
// its checksum.
func Marshal(m *Map) ([]byte, error) {
	if m.ChecksumType != SHA256 {
		return nil, fmt.Errorf("block map: writing %q checksums: only %s is written", m.ChecksumType, SHA256)
	}
	zeros := strings.Repeat("0", sha256.Size*2)
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\" ?>\n")
	b.WriteString("<!-- The block map of an image: the blocks that hold data (written by usbflash).\n" +
		"     Blocks outside the ranges are zero in the image and need not be copied. -->\n\n")
	b.WriteString("<bmap version=\"2.0\">\n")
	fmt.Fprintf(&b, "    <ImageSize> %d </ImageSize>\n", m.ImageSize)
	fmt.Fprintf(&b, "    <BlockSize> %d </BlockSize>\n", m.BlockSize)
	fmt.Fprintf(&b, "    <BlocksCount> %d </BlocksCount>\n", m.BlocksCount)
	fmt.Fprintf(&b, "    <MappedBlocksCount> %d </MappedBlocksCount>\n", m.MappedBlocksCount)
	fmt.Fprintf(&b, "    <ChecksumType> %s </ChecksumType>\n", SHA256)
	fmt.Fprintf(&b, "    <BmapFileChecksum> %s </BmapFileChecksum>\n", zeros)
	b.WriteString("    <BlockMap>\n")
	for _, r := range m.Ranges {
		if len(r.Checksum) != len(zeros) {
			return nil, fmt.Errorf("block map: range %s has no SHA-256", r)
		}
		if r.First == r.Last {
			fmt.Fprintf(&b, "        <Range chksum=\"%s\"> %d </Range>\n", r.Checksum, r.First)
		} else {
			fmt.Fprintf(&b, "        <Range chksum=\"%s\"> %d-%d </Range>\n", r.Checksum, r.First, r.Last)
		}
	}
	b.WriteString("    </BlockMap>\n</bmap>\n")
	out := b.Bytes()
	sum := sha256.Sum256(out)
	i := bytes.Index(out, []byte(zeros))
	copy(out[i:], hex.EncodeToString(sum[:]))
	return out, nil
}
