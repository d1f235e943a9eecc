package xxh3

// Accum is one implementation of xxh3's accumulation of a long input
// (more than 240 bytes): the portable one or a vector one. Each gives the
// same hash; they differ in speed, by CPU and by emulator.
type Accum struct {
	name  string
	long  func(accs *[8]u64, p, secret ptr, l u64)
	block func(accs *[8]u64, p, secret ptr)
}

// Name says which implementation a is ("scalar", "avx2", "sse2", "neon").
func (a Accum) Name() string { return a.name }

// Scalar is the portable implementation, in Go.
var Scalar = Accum{name: "scalar", long: accumScalar, block: accumBlockScalar}

// Accums are the implementations this CPU runs: Scalar first, then the
// vector ones it has the instructions for.
func Accums() []Accum { return append([]Accum{Scalar}, vectorAccums()...) }
