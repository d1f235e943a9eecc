package xxh3

// wantVector: NEON is in every arm64 CPU.
var wantVector = []string{"neon"}
