//go:build !amd64 && !arm64

package xxh3

// wantVector: upstream has no vector code here.
var wantVector []string
