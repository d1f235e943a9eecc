package main

import (
	"context"
	"errors"
)

// Exit codes are part of the interface: scripts and factory stations branch
// on them. README.md documents the same table.
const (
	exitOK        = 0
	exitInternal  = 1   // a bug or an unclassified failure
	exitUsage     = 2   // bad flags or target syntax
	exitRefused   = 3   // a safety check said no: write-protected, too small, mounted, not confirmed
	exitSource    = 4   // the image could not be read or decoded
	exitDevice    = 5   // the reader or the card failed, or went away
	exitVerify    = 6   // read-back differs from the image
	exitPartial   = 7   // several cards: some were written, some failed (the table says which)
	exitCancelled = 130 // interrupted (128 + SIGINT, as shells report it)
)

// refusedError is a safety check that stopped a command before any write.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// codedError carries an exit code chosen where the failure was understood,
// for errors whose type alone does not tell.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// reportedError marks an error the command already presented (as JSON, for
// instance), so run does not print it a second time.
type reportedError struct{ err error }

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

func errorAlreadyReported(err error) bool {
	var r *reportedError
	return errors.As(err, &r)
}

// exitCode maps an error to the documented exit code. The most specific
// classification wins: an explicit code, then cancellation, then the kind.
func exitCode(err error) int {
	var (
		coded   *codedError
		usage   *usageError
		refused *refusedError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &coded):
		return coded.code
	case errors.Is(err, context.Canceled):
		return exitCancelled
	case errors.As(err, &usage):
		return exitUsage
	case errors.As(err, &refused):
		return exitRefused
	}
	return classifyDomainError(err)
}
