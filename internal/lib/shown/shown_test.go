package shown

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	tests := []struct{ raw, want string }{
		{"https://host/os.img.xz", "https://host/os.img.xz"},
		{"https://user:pass@host/path/os.img?X-Amz-Signature=abc&t=1", "https://user:***@host/path/os.img?***"},
		{"https://ghp_token@host/os.img", "https://***@host/os.img"},
		{"https://host/os.img?", "https://host/os.img?***"},
		{"https://host/os.img#frag", "https://host/os.img"},
		{"http://u:p%40ss@host:8080/a%20b.img?tok=1", "http://u:***@host:8080/a%20b.img?***"},
		{"/srv/images/os.img", "/srv/images/os.img"},
		{"os.img", "os.img"},
		{"https://u:secret@ho st/x?tok=1", "https://***@ho st/***"},
	}
	for _, tc := range tests {
		got := URL(tc.raw)
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.raw, got, tc.want)
		}
		for _, s := range []string{"pass", "secret", "Signature", "token", "tok=", "p%40ss"} {
			if strings.Contains(got, s) {
				t.Errorf("URL(%q) = %q shows %q", tc.raw, got, s)
			}
		}
	}
}

func TestURLsIn(t *testing.T) {
	tests := []struct{ text, want string }{
		{`Get "https://u:pw@h/a?sig=1": EOF`, `Get "https://u:***@h/a?***": EOF`},
		{"resuming https://h/os.img?t=x at 5 MB; HTTPS://h/b?k=2", "resuming https://h/os.img?*** at 5 MB; https://h/b?***"},
		{"no URL here", "no URL here"},
		{"https://h/os.img?tok=abc: the server answered 404", "https://h/os.img?***: the server answered 404"},
		{"(see https://u:p@h/x.img.)", "(see https://u:***@h/x.img.)"},
	}
	for _, tc := range tests {
		if got := URLsIn(tc.text); got != tc.want {
			t.Errorf("URLsIn(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Raspberry Pi OS (64-bit)", "Raspberry Pi OS (64-bit)"},
		{"Ünïcödé – fine\tand\nlines", "Ünïcödé – fine\tand\nlines"},
		{"evil\x1b[2J\x1b]0;title\x07", `evil\x1b[2J\x1b]0;title\x07`},
		{"csi\u009b31m", `csi\u009b31m`},
		{"cr\rover", `cr\x0dover`},
		{"del\x7f", `del\x7f`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"bidi\u202etxt.exe", `bidi\u202etxt.exe`},
	}
	for _, tc := range tests {
		got := Text(tc.in)
		if got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.ContainsAny(got, "\x1b\r\x07\u009b") {
			t.Errorf("Text(%q) = %q keeps a control character", tc.in, got)
		}
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	fmt.Fprintf(Writer(&b), "vendor\t%s\n", "ACME\x1b[31m")
	if got, want := b.String(), "vendor\tACME\\x1b[31m\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}
