//go:build !unix

package testfifo

import "testing"

// Make fails the test: named pipes are a unix facility, and the tests that
// use them run on the unix builds (they are vetted, not run, elsewhere).
func Make(tb testing.TB, path string, data []byte) {
	tb.Helper()
	tb.Fatalf("testfifo: %s: named pipes need a unix system", path)
}
