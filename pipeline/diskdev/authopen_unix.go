//go:build unix

package diskdev

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// authopenArgs are the arguments that have authopen open path with the
// open(2) flags given (2: O_RDWR, 0: O_RDONLY) and send the descriptor
// on its standard output (authopen(1): -stdoutpipe).
func authopenArgs(path string, flags int) []string {
	return []string{"-stdoutpipe", "-o", strconv.Itoa(flags), path}
}

// HelperError is a helper (authopen) that sent no descriptor: the user
// cancelled or is no administrator, or the open failed.
type HelperError struct {
	Helper string
	Path   string
	Err    error  // how it ended
	Said   string // what it printed on standard error
}

func (e *HelperError) Error() string {
	msg := fmt.Sprintf("%s sent no descriptor for %s: %v", e.Helper, e.Path, e.Err)
	if e.Said != "" {
		msg += ": " + e.Said
	}
	return msg
}

func (e *HelperError) Unwrap() error { return e.Err }

// receiveFD runs helper with args, its standard output one end of a
// socket pair, and receives the descriptor it sends over the pair
// (SCM_RIGHTS, unix.Recvmsg and unix.ParseUnixRights), named name. A
// helper that ends without sending one is a *HelperError; one that sends
// several has the first taken and the others closed.
func receiveFD(ctx context.Context, name, helper string, args ...string) (*os.File, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	unix.CloseOnExec(pair[0])
	ours := pair[0]
	defer unix.Close(ours)
	theirs := os.NewFile(uintptr(pair[1]), "helper's end")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, helper, args...)
	cmd.Stdout, cmd.Stderr = theirs, &stderr
	err = cmd.Start()
	theirs.Close() // the helper holds its copy; ours must go for EOF
	if err != nil {
		return nil, &HelperError{Helper: helper, Path: name, Err: err}
	}
	fd, recvErr := recvFD(ours)
	waitErr := cmd.Wait()
	said := strings.TrimSpace(stderr.String())
	switch {
	case fd >= 0 && waitErr == nil:
		return os.NewFile(uintptr(fd), name), nil
	case fd >= 0:
		unix.Close(fd) // it failed after sending: do not trust what it sent
		return nil, &HelperError{Helper: helper, Path: name, Err: waitErr, Said: said}
	case waitErr != nil:
		return nil, &HelperError{Helper: helper, Path: name, Err: waitErr, Said: said}
	case recvErr != nil:
		return nil, &HelperError{Helper: helper, Path: name, Err: recvErr, Said: said}
	}
	return nil, &HelperError{Helper: helper, Path: name, Err: errors.New("it ended without one"), Said: said}
}

// recvFD receives one message on sock and the first descriptor it
// carries; -1 when it carries none (the helper closed its end).
func recvFD(sock int) (int, error) {
	buf := make([]byte, 256)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return -1, fmt.Errorf("recvmsg: %w", err)
		}
		if oobn == 0 {
			if n == 0 {
				return -1, nil // end of stream: nothing sent
			}
			continue // bytes without a descriptor: read on
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return -1, fmt.Errorf("the control message: %w", err)
		}
		fd := -1
		for i := range msgs {
			fds, err := unix.ParseUnixRights(&msgs[i])
			if err != nil {
				continue
			}
			for _, f := range fds {
				if fd < 0 {
					fd = f
					unix.CloseOnExec(f)
				} else {
					unix.Close(f)
				}
			}
		}
		if fd < 0 {
			return -1, errors.New("a control message without a descriptor")
		}
		return fd, nil
	}
}
