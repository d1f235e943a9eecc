// Package bmap reads and writes bmaptool's XML block maps: which blocks of
// an image hold data, with a checksum per range of blocks.
package bmap

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// Checksum types a map may use.
const (
	SHA256 = "sha256"
	SHA1   = "sha1"
)

// Range is blocks First..Last of the image, both included, and the
// lower-case hex checksum of their bytes ("" when the map has none).
type Range struct {
	First, Last int64
	Checksum    string
}

// Map is a parsed block map.
type Map struct {
	Version           string
	ImageSize         int64
	BlockSize         int64
	BlocksCount       int64
	MappedBlocksCount int64
	// ChecksumType is SHA256, SHA1 or "" (format 1.0-1.2: no checksums).
	ChecksumType string
	// Ranges are sorted, do not overlap and lie inside the image.
	Ranges []Range
}

// Error is a map that cannot be used; Reason says what is wrong with it.
type Error struct {
	Reason string
}

func (e *Error) Error() string { return "block map: " + e.Reason }

func errorf(format string, args ...any) error {
	return &Error{Reason: fmt.Sprintf(format, args...)}
}

// xmlMap mirrors the XML of every format version: 1.3 names the checksum
// sha1 (attribute and file checksum), 1.4 and 2.0 chksum and ChecksumType.
type xmlMap struct {
	XMLName           xml.Name `xml:"bmap"`
	Version           string   `xml:"version,attr"`
	ImageSize         string   `xml:"ImageSize"`
	BlockSize         string   `xml:"BlockSize"`
	BlocksCount       string   `xml:"BlocksCount"`
	MappedBlocksCount string   `xml:"MappedBlocksCount"`
	ChecksumType      string   `xml:"ChecksumType"`
	BmapFileChecksum  string   `xml:"BmapFileChecksum"`
	BmapFileSHA1      string   `xml:"BmapFileSHA1"`
	Ranges            []struct {
		Text   string `xml:",chardata"`
		Chksum string `xml:"chksum,attr"`
		SHA1   string `xml:"sha1,attr"`
	} `xml:"BlockMap>Range"`
}

// maxMajor is the newest format major version understood; bmaptool's rule
// is that minor versions only add what older readers may ignore.
const maxMajor = 2

// Parse decodes and checks a block map: its version, that its counts agree
// with each other and with its ranges, that ranges are in order, do not
// overlap and end inside the image, that checksums have the right length,
// and the checksum of the file itself when it carries one.
func Parse(data []byte) (*Map, error) {
	var x xmlMap
	if err := xml.Unmarshal(data, &x); err != nil {
		return nil, errorf("not a bmap XML file: %v", err)
	}
	m := &Map{Version: strings.TrimSpace(x.Version)}
	major, minor, err := parseVersion(m.Version)
	if err != nil {
		return nil, err
	}
	if m.ImageSize, err = field("ImageSize", x.ImageSize, 0); err != nil {
		return nil, err
	}
	if m.BlockSize, err = field("BlockSize", x.BlockSize, 1); err != nil {
		return nil, err
	}
	if m.BlocksCount, err = field("BlocksCount", x.BlocksCount, 0); err != nil {
		return nil, err
	}
	if m.MappedBlocksCount, err = field("MappedBlocksCount", x.MappedBlocksCount, 0); err != nil {
		return nil, err
	}
	if want := (m.ImageSize + m.BlockSize - 1) / m.BlockSize; m.BlocksCount != want {
		return nil, errorf("BlocksCount is %d but an image of %d bytes has %d blocks of %d bytes", m.BlocksCount, m.ImageSize, want, m.BlockSize)
	}
	fileSum := ""
	switch {
	case major >= 2 || (major == 1 && minor == 4):
		m.ChecksumType = strings.TrimSpace(x.ChecksumType)
		fileSum = strings.TrimSpace(x.BmapFileChecksum)
		if m.ChecksumType != SHA256 && m.ChecksumType != SHA1 {
			return nil, errorf("ChecksumType %q: want %s or %s", m.ChecksumType, SHA256, SHA1)
		}
	case minor == 3:
		m.ChecksumType = SHA1
		fileSum = strings.TrimSpace(x.BmapFileSHA1)
	}
	var mapped int64
	for i, xr := range x.Ranges {
		r, err := parseRange(xr.Text)
		if err != nil {
			return nil, err
		}
		r.Checksum = strings.ToLower(strings.TrimSpace(xr.Chksum))
		if m.ChecksumType == SHA1 && major == 1 && minor == 3 {
			r.Checksum = strings.ToLower(strings.TrimSpace(xr.SHA1))
		}
		if err := checkSumText(m.ChecksumType, r.Checksum, "range "+r.String()); err != nil {
			return nil, err
		}
		if r.Last >= m.BlocksCount {
			return nil, errorf("range %s ends past the image's last block %d (%d bytes)", r, m.BlocksCount-1, m.ImageSize)
		}
		if i > 0 {
			prev := m.Ranges[i-1]
			if r.First <= prev.Last {
				return nil, errorf("range %s overlaps or precedes range %s: ranges must be in order and disjoint", r, prev)
			}
		}
		mapped += r.Last - r.First + 1
		m.Ranges = append(m.Ranges, r)
	}
	if mapped != m.MappedBlocksCount {
		return nil, errorf("MappedBlocksCount is %d but the ranges hold %d blocks", m.MappedBlocksCount, mapped)
	}
	if fileSum != "" {
		if err := checkFileSum(data, m.ChecksumType, fileSum); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func parseVersion(v string) (major, minor int, err error) {
	a, b, ok := strings.Cut(v, ".")
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || major < 1 || minor < 0 {
		return 0, 0, errorf("version %q: want major.minor", v)
	}
	if major > maxMajor {
		return 0, 0, errorf("format version %s is newer than this usbflash understands (up to %d.x)", v, maxMajor)
	}
	return major, minor, nil
}

func field(name, text string, least int64) (int64, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return 0, errorf("no %s element", name)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < least {
		return 0, errorf("%s %q: want a whole number of at least %d", name, s, least)
	}
	return n, nil
}

// parseRange reads "first-last" or, in old files, a single block "n".
func parseRange(text string) (Range, error) {
	s := strings.TrimSpace(text)
	a, b, isRange := strings.Cut(s, "-")
	first, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	last, err2 := first, error(nil)
	if isRange {
		last, err2 = strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	}
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return Range{}, errorf("range %q: want FIRST-LAST block numbers with FIRST <= LAST", s)
	}
	return Range{First: first, Last: last}, nil
}

func checkSumText(typ, sum, what string) error {
	if sum == "" {
		return nil // ranges without a checksum are allowed in every version
	}
	want := 0
	switch typ {
	case SHA256:
		want = sha256.Size * 2
	case SHA1:
		want = sha1.Size * 2
	default:
		return errorf("%s has a checksum but the map names no checksum type", what)
	}
	if _, err := hex.DecodeString(sum); err != nil || len(sum) != want {
		return errorf("%s: checksum %q is not a %s (%d hex digits)", what, sum, typ, want)
	}
	return nil
}

// checkFileSum checks the map's own checksum, computed by bmaptool over the
// file with the checksum's digits replaced by zeros.
func checkFileSum(data []byte, typ, sum string) error {
	if err := checkSumText(typ, sum, "the map's own checksum"); err != nil {
		return err
	}
	i := bytes.Index(data, []byte(sum))
	if i < 0 {
		// The file spells it in upper case: compare case-insensitively.
		i = bytes.Index(bytes.ToLower(data), []byte(sum))
	}
	if i < 0 {
		return errorf("the map's own checksum could not be located in the file")
	}
	zeroed := bytes.Clone(data)
	copy(zeroed[i:], strings.Repeat("0", len(sum)))
	h := newHash(typ)
	h.Write(zeroed)
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return errorf("the map's own %s is %s but the file hashes to %s: the map was altered or damaged", typ, sum, got)
	}
	return nil
}

func newHash(typ string) hash.Hash {
	if typ == SHA1 {
		return sha1.New()
	}
	return sha256.New()
}

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// Bytes is the byte range [off, end) of r in an image of imageSize bytes
// (the last block may be short).
func (m *Map) Bytes(r Range) (off, end int64) {
	return r.First * m.BlockSize, min((r.Last+1)*m.BlockSize, m.ImageSize)
}

// MappedBytes is how many image bytes the map says hold data.
func (m *Map) MappedBytes() int64 {
	var n int64
	for _, r := range m.Ranges {
		off, end := m.Bytes(r)
		n += end - off
	}
	return n
}

// CheckImageSize refuses a map made for an image of another size.
func (m *Map) CheckImageSize(size int64) error {
	if size != m.ImageSize {
		return errorf("the map is for an image of %d bytes but the image has %d", m.ImageSize, size)
	}
	return nil
}

// Mapped says whether any mapped byte lies in [off, off+n).
func (m *Map) Mapped(off, n int64) bool {
	found := false
	m.Each(off, n, func(int64, int64) { found = true })
	return found
}

// Each calls fn with the mapped bytes [lo, hi) that lie in [off, off+n),
// in order.
func (m *Map) Each(off, n int64, fn func(lo, hi int64)) {
	for i := m.first(off); i < len(m.Ranges); i++ {
		start, end := m.Bytes(m.Ranges[i])
		if start >= off+n {
			return
		}
		fn(max(start, off), min(end, off+n))
	}
}
