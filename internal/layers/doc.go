// Package layers holds, as tests, the rules of the module's layering that
// no compiler checks: a positive table of what each package may import
// (policy.go's rules, read as Go's own go/build/deps_test.go reads its
// policy, so a new arrow fails until the table says it is meant), that
// no library names a flag of the command line (the CLI maps settings to
// its flags), that every public library shows its use in an Example, and
// that the binary links no package whose init is costly.
package layers
