package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/usbflash/usbflash/flash"
	"github.com/usbflash/usbflash/region"
)

// Exit codes are part of the interface: scripts and factory stations branch
// on them. exitCodes is their one table: --help prints it and a test holds
// README.md's table to it, both ways.
const (
	exitOK        = 0
	exitInternal  = 1
	exitUsage     = 2
	exitRefused   = 3
	exitSource    = 4
	exitDevice    = 5
	exitVerify    = 6
	exitPartial   = 7
	exitFake      = 8
	exitCancelled = 130
)

// exitStatus is one row of the exit-code table.
type exitStatus struct {
	code    int
	name    string // the JSON error event's "name"
	meaning string
}

// exitCodes is the exit-code table, in code order.
func exitCodes() []exitStatus {
	return []exitStatus{
		{exitOK, "ok", "success"},
		{exitInternal, "internal", "internal error (a bug: please report it)"},
		{exitUsage, "usage", "bad command, flag, argument or target syntax"},
		{exitRefused, "refused", "refused by a safety check: write-protected, image larger than the card, disk in use, not confirmed"},
		{exitSource, "image", "the image could not be read or decoded (corrupt or truncated archive)"},
		{exitDevice, "device", "the reader, the card or the USB stack failed, or the device went away; or the disk an output file goes to failed or is full"},
		{exitVerify, "verify", "what was read back differs from the image"},
		{exitPartial, "partial", "several cards: some were written and verified, some failed (the table and --report say which)"},
		{exitFake, "fake", "the card holds less than it claims (check; write --check when the image does not fit in what it holds)"},
		{exitCancelled, "cancelled", "interrupted (Ctrl-C, SIGTERM, SIGHUP) after syncing what was written"},
	}
}

// exitName is the table's name for code.
func exitName(code int) string {
	for _, s := range exitCodes() {
		if s.code == code {
			return s.name
		}
	}
	return "unknown"
}

// exitCodeHelp is the table as --help prints it.
func exitCodeHelp() string {
	var b strings.Builder
	b.WriteString("Exit codes:\n")
	for _, s := range exitCodes() {
		fmt.Fprintf(&b, "  %-4d %-10s %s\n", s.code, s.name, s.meaning)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// usageError is a mistake on the command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

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
		cards   *flash.CardsError
		restore *region.RestoreError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &cards):
		return cardsExitCode(cards)
	case errors.As(err, &coded):
		return coded.code
	case errors.As(err, &restore) && restore.Aborted:
		return exitCancelled
	case errors.As(err, &restore):
		// Also after a cancel: the region is not what it was.
		return exitDevice
	case errors.Is(err, context.Canceled):
		return exitCancelled
	case errors.As(err, &usage):
		return exitUsage
	case errors.As(err, &refused):
		return exitRefused
	}
	return classifyDomainError(err)
}

// cardsExitCode is the exit policy of a session of several cards: partial
// when some succeeded, the failure's own code when every card failed
// alike, a device failure when they failed differently.
func cardsExitCode(e *flash.CardsError) int {
	if e.Succeeded > 0 {
		return exitPartial
	}
	code := -1
	for _, err := range e.Errs {
		c := exitCode(err)
		if code >= 0 && c != code {
			return exitDevice
		}
		code = c
	}
	if code < 0 {
		return exitDevice
	}
	return code
}
