package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// TestVerifyMethodNames: every write method parses back from its name,
// the zero value is the default (digests), and a method a write cannot be
// checked by, or no method, is a *MethodError.
func TestVerifyMethodNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		want   VerifyMethod
		report string
		bad    bool
	}{
		{"xxh3", MethodDigests, "xxh3 per transfer", false},
		{"sha256", MethodSHA256, "sha256", false},
		{"compare", 0, "", true},
		{"md5", 0, "", true},
		{"", 0, "", true},
	} {
		m, err := ParseVerifyMethod(tc.name)
		var me *MethodError
		switch {
		case tc.bad && !errors.As(err, &me):
			t.Errorf("ParseVerifyMethod(%q) = %v, %v; want a *MethodError", tc.name, m, err)
		case !tc.bad && (err != nil || m != tc.want || m.String() != tc.name || m.Report() != tc.report || m.CheckWrite() != nil):
			t.Errorf("ParseVerifyMethod(%q) = %v (%q), %v; want %v (%q)", tc.name, m, m.Report(), err, tc.want, tc.report)
		}
	}
	var zero VerifyMethod
	if zero != MethodDigests || WriteMethods()[0] != MethodDigests {
		t.Errorf("the default is %v, want xxh3", zero)
	}
	if err := MethodCompare.CheckWrite(); err == nil {
		t.Error("a write checked by compare was accepted")
	}
}

// TestVerifyWritten: what a write records for each method is what its
// read-back checks: the image's SHA-256 only for sha256, digests only for
// xxh3; a card that reads one byte wrong fails either way, located to that
// byte when the image can be opened again and left as found when not.
func TestVerifyWritten(t *testing.T) {
	img := testImage(5*testTransfer+300, 4)
	const bad = 2*testTransfer + 77
	for _, m := range WriteMethods() {
		for _, tc := range []struct {
			name   string
			bad    int64
			reopen bool
		}{{"intact", -1, true}, {"bad byte", bad, true}, {"bad byte, no image", bad, false}} {
			t.Run(m.String()+" "+tc.name, func(t *testing.T) {
				mem := newTestDevice(t, 2048, testBS, oldByte)
				res, err := Write(context.Background(), mem, bytes.NewReader(img), m.Record(WriteOptions{TransferSize: testTransfer}))
				if err != nil {
					t.Fatal(err)
				}
				if hashed := res.SHA256 != [32]byte{}; hashed != (m == MethodSHA256) {
					t.Errorf("SHA-256 computed: %v", hashed)
				}
				if digests := len(res.Digests.List) > 0; digests != (m == MethodDigests) {
					t.Errorf("digests recorded: %v", digests)
				}
				var reopen func() (io.ReadCloser, error)
				if tc.reopen {
					reopen = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(img)), nil }
				}
				dev := &flakyReadDevice{Device: mem, off: tc.bad, times: -1}
				v, err := VerifyWritten(context.Background(), dev, m, res, VerifyOptions{TransferSize: testTransfer}, reopen)
				var ve *VerifyError
				switch {
				case tc.bad < 0:
					if err != nil || v.Method != m || v.Bytes != int64(len(img)) {
						t.Fatalf("VerifyWritten = %+v, %v", v, err)
					}
				case !errors.As(err, &ve):
					t.Fatalf("VerifyWritten = %v, want a *VerifyError", err)
				case tc.reopen && (ve.HashOnly || ve.Transfer || ve.Offset != bad):
					t.Fatalf("VerifyWritten = %v, want byte %d located", err, bad)
				case !tc.reopen && !ve.HashOnly && !ve.Transfer:
					t.Fatalf("VerifyWritten = %v, want the mismatch as found", err)
				}
			})
		}
	}
	if _, err := VerifyWritten(context.Background(), newTestDevice(t, 64, testBS, 0), MethodCompare, WriteResult{}, VerifyOptions{}, nil); err == nil {
		t.Error("a write verified by compare")
	}
}
