package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/session"
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

// exitStatus is one row of the exit-code table: the failures of class end
// with code.
type exitStatus struct {
	code    int
	class   failure.Class
	name    string // the JSON error event's "name"
	meaning string
}

// noClass is the class of the rows no failure's class leads to: success,
// and several cards of which some failed (flash.CardsError.Partial).
const noClass failure.Class = -1

// exitCodes is the exit-code table, in code order. A failure nobody
// classified (failure.Unknown) is a bug: internal.
func exitCodes() []exitStatus {
	return []exitStatus{
		{exitOK, noClass, "ok", "success"},
		{exitInternal, failure.Unknown, "internal", "internal error (a bug: please report it)"},
		{exitUsage, failure.Usage, "usage", "bad command, flag, argument or target syntax"},
		{exitRefused, failure.Refused, "refused", "refused by a safety check: write-protected, image larger than the card, disk in use, not confirmed"},
		{exitSource, failure.Image, "image", "the image could not be read or decoded (corrupt or truncated archive)"},
		{exitDevice, failure.Device, "device", "the reader, the card or the USB stack failed, or the device went away; or the disk an output file goes to failed or is full"},
		{exitVerify, failure.Verify, "verify", "what was read back differs from the image"},
		{exitPartial, noClass, "partial", "several cards: some were written and verified, some failed (the table and --report say which)"},
		{exitFake, failure.Fake, "fake", "the card holds less than it claims (check; write --check when the image does not fit in what it holds)"},
		{exitCancelled, failure.Interrupted, "cancelled", "interrupted (Ctrl-C, SIGTERM, SIGHUP) after syncing what was written"},
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

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Class() failure.Class { return failure.Usage }

// refusedError is a safety check that stopped a command before any write.
type refusedError struct{ msg string }

func (e *refusedError) Error() string        { return e.msg }
func (e *refusedError) Class() failure.Class { return failure.Refused }

// reportedError marks an error the command already presented (as JSON, for
// instance), so run does not print it a second time.
type reportedError struct{ err error }

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

func errorAlreadyReported(err error) bool {
	var r *reportedError
	return errors.As(err, &r)
}

// exitCode is the documented exit code of err: its class's row, but for a
// session of several cards some of which succeeded (flash's policy).
func exitCode(err error) int {
	var cards *session.CardsError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &cards) && cards.Partial():
		return exitPartial
	}
	return classCode(failure.Of(err))
}

// classCode is the exit code of a class of failure: its row.
func classCode(class failure.Class) int {
	if code, ok := classCodes()[class]; ok {
		return code
	}
	return exitInternal
}

// classCodes is the table by class, for the records of a --report.
func classCodes() map[failure.Class]int {
	codes := map[failure.Class]int{}
	for _, s := range exitCodes() {
		if s.class != noClass {
			codes[s.class] = s.code
		}
	}
	return codes
}
