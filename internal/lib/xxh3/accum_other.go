//go:build !amd64 && !arm64

package xxh3

// vectorAccums is none: upstream has vector code for amd64 and arm64
// alone.
func vectorAccums() []Accum { return nil }
