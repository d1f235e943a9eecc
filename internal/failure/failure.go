// Package failure is the vocabulary in which usbflash's errors say what
// class of failure they are, as net.Error says Timeout(): a library error
// that knows its class has a Class method, and callers ask Of rather than
// testing for a list of types. The exit code of a command is one small
// table over classes (cmd/usbflash), and its advice is keyed by class and
// the error's kind.
//
// Libraries state facts and never name a command-line flag: an error about
// a setting the caller gave carries which setting it was (SettingError),
// and the command that took the flag names it.
package failure

import (
	"context"
	"errors"
	"fmt"
)

// Class is a class of failure, as a script branches on it.
type Class int

// The classes. Unknown is a failure nobody classified: a bug.
const (
	Unknown     Class = iota
	Usage             // a bad command, flag, argument, setting or target syntax
	Refused           // a safety check stopped the work before a write
	Image             // the image could not be read, decoded or trusted
	Device            // the reader, the card, the USB stack or an output disk failed
	Verify            // what was read back differs from what was expected
	Fake              // the card holds less than it claims
	Interrupted       // a stop request (Ctrl-C, SIGTERM, SIGHUP) ended the work
)

var classNames = [...]string{
	Unknown: "unknown", Usage: "usage", Refused: "refused", Image: "image",
	Device: "device", Verify: "verify", Fake: "fake", Interrupted: "interrupted",
}

func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Classed is an error that says its own class.
type Classed interface {
	error
	Class() Class
}

// Of is err's class: that of the outermost error in its chain that says
// one (the layer that understood the failure best wraps the others), else
// Interrupted for a cancelled context, else Unknown. A nil error has none.
func Of(err error) Class {
	if c := said(err); c != Unknown {
		return c
	}
	if errors.Is(err, context.Canceled) {
		return Interrupted
	}
	return Unknown
}

// said is the class the outermost error in err's chain says, Unknown if
// none does.
func said(err error) Class {
	for e := err; e != nil; {
		if c, ok := e.(Classed); ok && c.Class() != Unknown {
			return c.Class()
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		case interface{ Unwrap() []error }:
			// A joined error: the first branch that says a class (a
			// cancellation joined to a failure that says its class is
			// that failure).
			for _, b := range u.Unwrap() {
				if c := said(b); c != Unknown {
					return c
				}
			}
			e = nil
		default:
			e = nil
		}
	}
	return Unknown
}

// Within is the class of an error that adds facts (where, which command)
// to cause: cause's own class when it has one, a cancellation's
// Interrupted included, else c. A wrapper's Class method returns it, so
// that a write-protected card under a failed write stays a refusal.
func Within(c Class, cause error) Class {
	if k := Of(cause); k != Unknown {
		return k
	}
	return c
}

// classed is an error given a class by the code that understood it.
type classed struct {
	class Class
	err   error
}

func (e *classed) Error() string { return e.err.Error() }
func (e *classed) Unwrap() error { return e.err }
func (e *classed) Class() Class  { return e.class }

// Wrap gives err the class c, keeping its text and its chain. Nil stays
// nil.
func Wrap(c Class, err error) error {
	if err == nil {
		return nil
	}
	return &classed{class: c, err: err}
}

// New is a sentinel error of class c, as errors.New makes one: errors.Is
// finds it by identity, and a kind in the advice table is one.
func New(c Class, text string) error {
	return &classed{class: c, err: errors.New(text)}
}

// Errorf is fmt.Errorf with a class.
func Errorf(c Class, format string, args ...any) error {
	return &classed{class: c, err: fmt.Errorf(format, args...)}
}

// Setting names a setting a library was given, so that an error about it
// can be reported in the words of whoever gave it (cmd names the flag).
type Setting string

// SettingError is a setting the library cannot work with: a usage error.
type SettingError struct {
	Setting Setting
	Err     error
}

func (e *SettingError) Error() string { return string(e.Setting) + ": " + e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// Class is Usage: the caller chose the setting.
func (e *SettingError) Class() Class { return Usage }

// SettingOf is the setting an error in err's chain is about, "" if none.
func SettingOf(err error) Setting {
	var s *SettingError
	if errors.As(err, &s) {
		return s.Setting
	}
	return ""
}
