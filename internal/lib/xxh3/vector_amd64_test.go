package xxh3

// wantVector: SSE2 is in every amd64 CPU.
var wantVector = []string{"sse2"}
