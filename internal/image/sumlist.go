package image

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// A checksum list, read as `sha256sum -c` reads it (GNU coreutils'
// md5sum.c), so that usbflash never calls a download good that the
// publisher's own instructions would call FAILED:
//
//   - "HEX  NAME" and "HEX *NAME" (text and binary marker), and "HEX NAME"
//     with one blank (BSD's sha256 -r); every character after the marker
//     is the name, blanks included;
//   - "SHA256 (NAME) = HEX", the BSD form sha256sum --tag, shasum --tag,
//     macOS and FreeBSD write;
//   - a line starting with a backslash has "\\", "\n" and "\r" escaped in
//     its name, as sha256sum writes names holding them;
//   - a PGP clear-signed list (Ubuntu's, Fedora's): only the signed text
//     between the armour lines counts, dash-unescaped;
//   - lines of other algorithms (an MD5, SHA-1 or SHA-512 of the same
//     length-checked hex, "SHA512 (NAME) = ") and lines that are no
//     checksum at all are passed over, as sha256sum -c passes over lines
//     it cannot read, but a list with no checksum line of any kind is no
//     list (an error page saved under its name).
//
// A name is relative to the list's directory: "sub/os.img.xz" is not the
// os.img.xz beside the list.

// sumLine is a line of a list that gives a SHA-256.
type sumLine struct {
	no   int    // 1-based, in the file
	text string // as written (escapes and all), for messages
	name string // the file it is for, unescaped; "" for a lone sum
	sum  string // lower-case hex
}

// sumList is what a checksum list says.
type sumList struct {
	lines  []sumLine // the SHA-256 lines, in order
	others int       // checksum lines of other algorithms
	signed bool      // PGP clear-signed: lines come from the signed text
	// textLine is the line of the file a clear-signed list's signed text
	// starts on, 1-based.
	textLine int
}

// Armour lines of a PGP clear-signed message (RFC 9580, section 7).
const (
	pgpSignedBegin = "-----BEGIN PGP SIGNED MESSAGE-----"
	pgpSigBegin    = "-----BEGIN PGP SIGNATURE-----"
)

// maxSumLine bounds a list's line: longer ones are not a checksum list.
const maxSumLine = 1 << 20

// errNoSumLines: the file holds no line in any checksum format.
var errNoSumLines = errors.New("holds no checksum lines (sha256sum's HEX  NAME or the BSD form SHA256 (NAME) = HEX)")

// errUnsignedEnd: a clear-signed list whose signature armour never comes.
var errUnsignedEnd = errors.New("is a PGP signed message that ends before its signature")

// parseSumList reads a checksum list.
func parseSumList(r io.Reader) (*sumList, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSumLine)
	l := &sumList{}
	no := 0
	// 0: plain text or before the armour; 1: the armour's headers; 2:
	// the signed text; 3: the signature and after.
	state := 0
	for sc.Scan() {
		no++
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case state == 0 && line == pgpSignedBegin:
			// Only the signed text counts: what came before is not signed.
			*l = sumList{signed: true}
			state = 1
			continue
		case state == 1:
			if line == "" {
				state = 2 // the headers (Hash: SHA512) end at a blank line
				l.textLine = no + 1
			}
			continue
		case state == 2 && line == pgpSigBegin:
			state = 3
			continue
		case state == 3:
			continue // what follows the signed text is not signed
		case state == 2:
			line = strings.TrimPrefix(line, "- ") // dash-escaping
		}
		l.add(no, line)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d is longer than %d bytes: %w", no+1, maxSumLine, errNoSumLines)
		}
		return nil, err
	}
	if l.signed && state != 3 {
		return nil, errUnsignedEnd
	}
	if len(l.lines) == 0 && l.others == 0 {
		return nil, errNoSumLines
	}
	return l, nil
}

// add reads one line, as split_3 in md5sum.c does.
func (l *sumList) add(no int, text string) {
	s := strings.TrimLeft(text, " \t")
	if s == "" || s[0] == '#' {
		return
	}
	escaped := s[0] == '\\'
	if escaped {
		s = s[1:]
	}
	var hexSum, name string
	if algo, rest, ok := bsdTag(s); ok {
		// NAME) = HEX: the name ends at the last ')'.
		end := strings.LastIndexByte(rest, ')')
		if end < 0 {
			return
		}
		after := strings.TrimLeft(rest[end+1:], " \t")
		if !strings.HasPrefix(after, "=") {
			return
		}
		name, hexSum = rest[:end], strings.TrimSpace(after[1:])
		if !isHex(hexSum) {
			return
		}
		if algo != "SHA256" && algo != "SHA2-256" {
			l.others++
			return
		}
		if len(hexSum) != 64 {
			return // not a SHA-256: sha256sum -c calls the line improperly formatted
		}
	} else {
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			end = len(s)
		}
		hexSum = s[:end]
		if !isHex(hexSum) || !digestLength(len(hexSum)) {
			return
		}
		if len(hexSum) != 64 {
			l.others++
			return
		}
		if end < len(s) {
			// One blank, then the marker (' ' text, '*' binary) or, in
			// the one-blank form, the name itself.
			name = s[end+1:]
			if name != "" && (name[0] == ' ' || name[0] == '*') {
				name = name[1:]
			}
			if name == "" {
				return
			}
		}
	}
	if escaped {
		var ok bool
		if name, ok = unescapeSumName(name); !ok {
			return
		}
	}
	l.lines = append(l.lines, sumLine{no: no, text: text, name: name, sum: strings.ToLower(hexSum)})
}

// bsdTag recognises "ALGO (" or "ALGO(" at the start of s (openssl dgst
// writes no blank) and returns the algorithm and what follows the '('.
func bsdTag(s string) (algo, rest string, ok bool) {
	open := strings.IndexByte(s, '(')
	if open <= 0 {
		return "", "", false
	}
	algo = strings.TrimSuffix(s[:open], " ")
	for _, c := range algo {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '/') {
			return "", "", false
		}
	}
	return strings.ToUpper(algo), s[open+1:], algo != ""
}

// digestLength says n hex digits are a digest sha*sum or md5sum writes:
// MD5, SHA-1, SHA-224, SHA-256, SHA-384, SHA-512.
func digestLength(n int) bool {
	switch n {
	case 32, 40, 56, 64, 96, 128:
		return true
	}
	return false
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// unescapeSumName undoes sha256sum's escaping of a name; ok is false for
// an escape it never writes (sha256sum -c rejects the line too).
func unescapeSumName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", false
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		default:
			return "", false
		}
	}
	return b.String(), true
}

// forPath returns the SHA-256 lines for the file at rel, a path relative
// to the list's directory (abs is the same file's absolute path, for a
// line that names one); with lone, also lines that are a sum alone (a
// sidecar named after the image).
func (l *sumList) forPath(rel, abs string, lone bool) []sumLine {
	var got []sumLine
	for _, ln := range l.lines {
		switch {
		case ln.name == "":
			if !lone {
				continue
			}
		case filepath.IsAbs(ln.name):
			if abs == "" || filepath.Clean(ln.name) != abs {
				continue
			}
		case filepath.Clean(ln.name) != rel:
			continue
		}
		got = append(got, ln)
	}
	return got
}

// elsewhere returns the names of lines for a file of base's name in
// another directory, for saying why a list has no line for the image.
func (l *sumList) elsewhere(rel string) []string {
	var names []string
	for _, ln := range l.lines {
		if ln.name != "" && filepath.Base(ln.name) == filepath.Base(rel) && filepath.Clean(ln.name) != rel {
			names = append(names, ln.name)
		}
	}
	return names
}

// agreed returns the one sum lines give, or a *ChecksumConflictError.
func agreed(list, image string, lines []sumLine) (sumLine, error) {
	for _, ln := range lines[1:] {
		if ln.sum != lines[0].sum {
			return sumLine{}, &ChecksumConflictError{List: list, Image: image, First: lines[0].no, FirstText: lines[0].text,
				Second: ln.no, SecondText: ln.text}
		}
	}
	return lines[0], nil
}

// printable quotes a line for a message when it holds what a terminal
// would not show as written.
func printable(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Sprintf("%q", s)
	}
	return s
}
