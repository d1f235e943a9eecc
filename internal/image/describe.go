package image

import (
	"bytes"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Describe says in a few words what data beginning with head looks like:
// "xz-compressed data", "an HTML document", "text", "an empty file", "a tar
// archive", "a disk image (MBR boot signature)". It looks only at head (the
// first sniffLen bytes are plenty) and is meant for messages that refuse an
// image, where "the download saved an error page" is the usual story.
func Describe(head []byte) string {
	if len(head) == 0 {
		return "an empty file"
	}
	sn := sniff(head)
	switch {
	case sn.truncated:
		return "the first bytes of " + describeFormat(sn.truncatedAs) + ", cut short"
	case sn.unsupported != "":
		return article(sn.unsupported)
	case sn.format != FormatRaw:
		return describeFormat(sn.format)
	}
	if d := describeText(head); d != "" {
		return d
	}
	switch {
	case len(bytes.Trim(head, "\x00")) == 0:
		return "zero bytes"
	case len(head) >= 512 && head[510] == 0x55 && head[511] == 0xaa:
		return "a disk image (MBR boot signature)"
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return "a PDF document"
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "a PNG picture"
	case bytes.HasPrefix(head, []byte{0xff, 0xd8, 0xff}):
		return "a JPEG picture"
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "an ELF executable"
	}
	return describeUnknown
}

// describeUnknown is what Describe says of bytes it does not recognise.
const describeUnknown = "binary data of no known format"

// describeFormat names a container the way Describe does.
func describeFormat(f Format) string {
	switch f {
	case FormatZip, Format7z, FormatTar:
		return article(f.String() + " archive")
	}
	return f.String() + "-compressed data"
}

// describeText recognises the text documents that take an image's place
// when a download goes wrong: a web server's error page, an API's JSON
// error, a redirect notice. "" when head is not text.
func describeText(head []byte) string {
	// A multi-byte character may be cut at the end of head.
	for i := 0; i < utf8.UTFMax && !utf8.Valid(head); i++ {
		head = head[:len(head)-1]
	}
	if len(head) == 0 || !utf8.Valid(head) {
		return ""
	}
	for _, r := range string(head) {
		if r < ' ' && r != '\t' && r != '\n' && r != '\r' && r != '\f' {
			return ""
		}
	}
	t := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(string(head), "\ufeff")))
	switch {
	case strings.HasPrefix(t, "<!doctype html"), strings.HasPrefix(t, "<html"),
		strings.HasPrefix(t, "<head"), strings.HasPrefix(t, "<body"),
		strings.HasPrefix(t, "<!--") && strings.Contains(t, "<html"):
		return "an HTML document"
	case strings.HasPrefix(t, "<?xml"):
		if strings.Contains(t, "<html") {
			return "an HTML document"
		}
		return "an XML document"
	case strings.HasPrefix(t, "{") || strings.HasPrefix(t, "["):
		return "a JSON document"
	}
	return "text"
}

// article puts "a" or "an" before a noun phrase.
func article(s string) string {
	if s != "" && strings.ContainsRune("aeiouAEIOU", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

// namePromise is what a file name promises: a container Source decodes
// (format), or one it recognises but does not decode (container).
type namePromise struct {
	format    Format
	container string
}

// String names the promised container the way Describe does.
func (p namePromise) String() string {
	if p.container != "" {
		return article(p.container)
	}
	return describeFormat(p.format)
}

// kept reports whether data sniffed as sn is what the name promised.
func (p namePromise) kept(sn sniffResult) bool {
	switch {
	case p.container != "":
		return sn.unsupported == p.container
	case sn.truncated:
		return sn.truncatedAs == p.format
	}
	return sn.unsupported == "" && sn.format == p.format
}

// nameSuffixes maps the suffixes that promise a container to that
// container. Compound forms (.img.xz, .raw.gz) end in one of these.
var nameSuffixes = []struct {
	suffix  string
	promise namePromise
}{
	{".xz", namePromise{format: FormatXz}}, {".txz", namePromise{format: FormatXz}},
	{".gz", namePromise{format: FormatGzip}}, {".gzip", namePromise{format: FormatGzip}}, {".tgz", namePromise{format: FormatGzip}},
	{".zst", namePromise{format: FormatZstd}}, {".zstd", namePromise{format: FormatZstd}}, {".tzst", namePromise{format: FormatZstd}},
	{".bz2", namePromise{format: FormatBzip2}}, {".bzip2", namePromise{format: FormatBzip2}}, {".tbz2", namePromise{format: FormatBzip2}},
	{".zip", namePromise{format: FormatZip}},
	{".lz4", namePromise{format: FormatLz4}}, {".7z", namePromise{format: Format7z}}, {".tar", namePromise{format: FormatTar}},
	{".lzma", namePromise{container: containerLzmaAlone}},
	{".lz", namePromise{container: "lzip stream"}},
	{".rar", namePromise{container: "RAR archive"}},
	{".lzo", namePromise{container: "lzop stream"}},
	{".br", namePromise{container: containerBrotli}},
}

// namedFormat is the container the file name promises, if any, and the
// suffix that promises it.
func namedFormat(path string) (namePromise, string, bool) {
	ext := strings.ToLower(filepath.Ext(path))
	for _, s := range nameSuffixes {
		if ext == s.suffix {
			return s.promise, filepath.Ext(path), true
		}
	}
	return namePromise{}, "", false
}
