//go:build !linux

package readonly

import "testing"

// immutable: root passes every permission check, and only the Linux build
// knows how to make a file immutable.
func immutable(t testing.TB, path string) {
	t.Skipf("running as root: %s cannot be made read-only here", path)
}
