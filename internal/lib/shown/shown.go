// Package shown makes text fit to be shown: a URL without its secrets, and
// text from outside the program (a catalog's names, a server's headers, a
// device's strings) without the control characters that would drive a
// terminal. Every message, event, report, log and record that holds such a
// text passes it through here, so that there is one rule for each.
package shown

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"
)

// secret is what stands for a password or a query.
const secret = "***"

// URL is a URL as anything the program writes shows it: its password and
// its query (a pre-signed URL's token) replaced by ***, its fragment
// dropped: "https://user:***@host/path?***". A user name with a password
// is kept (it says whose account); one alone is often a token, and is
// replaced too. Text that is not a URL with a scheme and a host is
// returned as it is, and one that does not parse loses everything after
// its host.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return unparsed(raw)
	}
	if u.Scheme == "" || u.Opaque != "" {
		return raw
	}
	user := ""
	if u.User != nil {
		user = secret + "@"
		if _, has := u.User.Password(); has {
			user = u.User.Username() + ":" + secret + "@"
		}
	}
	query := u.RawQuery != "" || u.ForceQuery
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	s := u.String()
	if user != "" {
		if prefix := u.Scheme + "://"; strings.HasPrefix(s, prefix) {
			s = prefix + user + s[len(prefix):]
		}
	}
	if query {
		s += "?" + secret
	}
	return s
}

// unparsed is a URL that does not parse, cut after its host: its user
// information and query may still hold secrets.
func unparsed(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return secret
	}
	host := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host = rest[:i]
	}
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = secret + "@" + host[i+1:]
	}
	return scheme + "://" + host + "/" + secret
}

// URLsIn is text (an error's message from a library, a log line) with
// each http(s) URL in it shown as URL shows it: a message built elsewhere
// carries no secret either.
func URLsIn(text string) string {
	var b strings.Builder
	for {
		i := urlStart(text)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i])
		text = text[i:]
		end := strings.IndexFunc(text, func(r rune) bool {
			return r <= ' ' || r == '"' || r == '\'' || r == '<' || r == '>' || r == '`' || r == 0x7f
		})
		if end < 0 {
			end = len(text)
		}
		// Punctuation that ends a URL ends the sentence around it.
		end = len(strings.TrimRight(text[:end], ".,:;!?)]}"))
		b.WriteString(URL(text[:end]))
		text = text[end:]
	}
}

// urlStart is where the first http:// or https:// in text begins, -1 for
// none (case aside).
func urlStart(text string) int {
	lower := strings.ToLower(text)
	i, j := strings.Index(lower, "http://"), strings.Index(lower, "https://")
	switch {
	case i < 0:
		return j
	case j < 0:
		return i
	}
	return min(i, j)
}

// Text is text from outside the program as a terminal may be given it:
// each control character but newline and tab (C0 with carriage return and
// escape, DEL, the C1 controls such as the single-byte CSI) and each byte
// that is not UTF-8 is written as a Go escape (\x1b, \u009b), so that an
// escape sequence in a catalog's name or a device's serial shows as
// characters instead of colouring, retitling or moving the terminal.
func Text(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case control(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// clean says s needs no escape.
func clean(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || control(r) {
			return false
		}
	}
	return utf8.ValidString(s)
}

// control says r drives a terminal rather than shows.
func control(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 ||
		// The bidirectional overrides and isolates reorder what follows.
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// Writer writes through Text: a table printed to it (a device's strings,
// a catalog's names) reaches the terminal escaped. Each Write is escaped
// on its own: callers write whole cells or lines.
func Writer(w io.Writer) io.Writer { return textWriter{w} }

type textWriter struct{ w io.Writer }

func (t textWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
