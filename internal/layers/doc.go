// Package layers holds, as tests, the rules of the module's layering that
// no compiler checks: which packages stay out of which (the pure-Go USB
// backend out of the cgo one's, drive out of scsi, fakecheck out of
// cardbench, fanout and cardbench out of the engine), and that no library
// names a flag of the command line (the CLI maps settings to its flags).
// It has no code.
package layers
