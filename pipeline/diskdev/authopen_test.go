//go:build unix

package diskdev

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeAuthopenEnv makes this test binary the fake authopen: run with
// authopen's arguments, it does what authopen does with -stdoutpipe
// (opens the file with the flags of -o and sends the descriptor on its
// standard output, a socket, as SCM_RIGHTS), or, as the variable's value
// says, what it does when the user cancels (prints and exits 1 without
// sending) or sends and then fails.
const fakeAuthopenEnv = "USBFLASH_FAKE_AUTHOPEN"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeAuthopenEnv); mode != "" {
		os.Exit(fakeAuthopen(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeAuthopen(mode string, args []string) int {
	if len(args) != 4 || args[0] != "-stdoutpipe" || args[1] != "-o" {
		fmt.Fprintf(os.Stderr, "usage: authopen -stdoutpipe -o FLAGS PATH (got %q)\n", args)
		return 2
	}
	if mode == "cancel" {
		fmt.Fprintln(os.Stderr, "authopen: user cancelled the authorization")
		return 1
	}
	flags, err := strconv.Atoi(args[2])
	if err != nil {
		return 2
	}
	fd, err := unix.Open(args[3], flags, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "authopen: %s: %v\n", args[3], err)
		return 1
	}
	if err := unix.Sendmsg(1, []byte{0}, unix.UnixRights(fd), nil, 0); err != nil {
		fmt.Fprintf(os.Stderr, "authopen: sendmsg: %v\n", err)
		return 1
	}
	if mode == "send-then-fail" {
		return 3
	}
	return 0
}

func TestReceiveFD(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The stand-in helper is this test binary; under a user-mode emulator
	// (make test-arm64 and the like) it is not one this kernel runs, so the
	// emulator runs it.
	helper, pre := self, []string(nil)
	if emu := os.Getenv("USBFLASH_TEST_EXEC"); emu != "" {
		helper, pre = emu, []string{self}
	}
	path := filepath.Join(t.TempDir(), "disk.img")
	args := func(flags int) []string { return append(slices.Clone(pre), authopenArgs(path, flags)...) }
	if err := os.WriteFile(path, bytes.Repeat([]byte{0xaa}, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("read-write", func(t *testing.T) {
		t.Setenv(fakeAuthopenEnv, "ok")
		f, err := receiveFD(context.Background(), path, helper, args(unix.O_RDWR)...)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// The descriptor is the file itself, open for writing.
		want, _ := os.Stat(path)
		if got, err := f.Stat(); err != nil || !os.SameFile(got, want) {
			t.Fatalf("received descriptor is not %s (%v)", path, err)
		}
		if _, err := f.WriteAt([]byte("usbflash"), 512); err != nil {
			t.Fatalf("writing through it: %v", err)
		}
		b, _ := os.ReadFile(path)
		if string(b[512:520]) != "usbflash" {
			t.Error("the write through the received descriptor is not in the file")
		}
		if fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
			t.Errorf("received descriptor not close-on-exec (%#x, %v)", fl, err)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		t.Setenv(fakeAuthopenEnv, "ok")
		f, err := receiveFD(context.Background(), path, helper, args(unix.O_RDONLY)...)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte("x"), 0); err == nil {
			t.Error("a descriptor opened with -o 0 was written")
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Setenv(fakeAuthopenEnv, "cancel")
		f, err := receiveFD(context.Background(), path, helper, args(unix.O_RDWR)...)
		var he *HelperError
		if f != nil || !errors.As(err, &he) || !strings.Contains(err.Error(), "user cancelled") || !strings.Contains(err.Error(), "exit status 1") {
			t.Fatalf("receiveFD = %v, %v; want a *HelperError with what authopen said", f, err)
		}
	})
	t.Run("sent, then failed", func(t *testing.T) {
		t.Setenv(fakeAuthopenEnv, "send-then-fail")
		f, err := receiveFD(context.Background(), path, helper, args(unix.O_RDWR)...)
		if f != nil || err == nil || !strings.Contains(err.Error(), "exit status 3") {
			t.Fatalf("receiveFD = %v, %v; want its failure", f, err)
		}
	})
	t.Run("no helper", func(t *testing.T) {
		_, err := receiveFD(context.Background(), path, filepath.Join(t.TempDir(), "authopen"), authopenArgs(path, unix.O_RDWR)...)
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("receiveFD of a missing helper = %v", err)
		}
	})
}
