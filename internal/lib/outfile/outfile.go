// Package outfile checks, before a command does its work, that a file it
// will write at the end can be created, and writes such files whole (a
// temporary name, then a rename); its errors name the file the user gave,
// never the temporary one.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/usbflash/usbflash/internal/failure"
)

// Ops of an Error.
const (
	// OpCreate: the file cannot be created where it is named (a missing
	// directory, no permission), found before any work.
	OpCreate = "create"
	// OpWrite: writing it failed once the work was done or under way (a
	// full disk, an I/O error).
	OpWrite = "write"
)

// Error is a file a command writes that could not be created or written.
// It states the facts.
type Error struct {
	Path string // the file as the user named it
	Op   string // OpCreate or OpWrite
	Err  error  // the system's reason, without the temporary name
}

func (e *Error) Error() string {
	if e.Op == OpCreate {
		return fmt.Sprintf("cannot create %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("writing %s: %v", e.Path, e.Err)
}

// Class is Usage for a file that cannot be created where it is named
// (found before the work), else the cause's or Device: the disk the file
// goes to failed or is full.
func (e *Error) Class() failure.Class {
	if e.Op == OpCreate {
		return failure.Usage
	}
	return failure.Within(failure.Device, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Check says whether path can be created (or replaced): it makes a
// temporary file in path's directory and removes it again.
func Check(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return &Error{Path: path, Op: OpCreate, Err: withoutPath(err)}
	}
	tmp.Close()
	if err := os.Remove(tmp.Name()); err != nil {
		return &Error{Path: path, Op: OpCreate, Err: withoutPath(err)}
	}
	return nil
}

// Write writes path whole: write fills a temporary file in path's
// directory, which is synced and renamed to path only when write
// succeeded. A failure to create, write or rename the file is an *Error
// naming path; write's other errors are returned as they are.
func Write(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return &Error{Path: path, Op: OpWrite, Err: withoutPath(err)}
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing to remove
	w := &recording{w: tmp}
	err = write(w)
	switch {
	case err != nil && w.err != nil && errors.Is(err, w.err):
		err = &Error{Path: path, Op: OpWrite, Err: withoutPath(w.err)}
	case err != nil:
		tmp.Close()
		return err
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644) // as os.Create would, not CreateTemp's 0600
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	var oe *Error
	if err != nil && !errors.As(err, &oe) {
		err = &Error{Path: path, Op: OpWrite, Err: withoutPath(err)}
	}
	return err
}

// recording remembers the first error of its writer.
type recording struct {
	w   io.Writer
	err error
}

func (r *recording) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// withoutPath drops a file name from an *os.PathError or *os.LinkError: the
// user named the file, not the temporary one.
func withoutPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
