package drive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// RuleName is the udev rule usbflash's packages install: it opens the
// readers usbflash drives to the group RuleGroup, which an administrator
// adds users to, or, in its opt-in variant, to the user at the seat
// (uaccess).
const RuleName = "70-usbflash.rules"

// RuleGroup is the group the packages' rule opens readers to, which they
// create empty.
const RuleGroup = "usbflash"

// ruleDirs are where udev reads rules, the administrator's first: a file
// there replaces the package's of the same name.
func ruleDirs() []string {
	return []string{"/etc/udev/rules.d", "/run/udev/rules.d", "/usr/local/lib/udev/rules.d", "/usr/lib/udev/rules.d", "/lib/udev/rules.d"}
}

// AccessError is a reader this user may not open: its USB device node
// grants no read and write access. It says what decides access here.
type AccessError struct {
	// Reader names the reader (its usb: target).
	Reader string
	// Node is its device node.
	Node string
	// Rule is the usbflash udev rule in force (the first RuleName in
	// udev's directories); "" when none is installed.
	Rule string
	// Group is the group the rule opens readers to (its default); ""
	// when it opens them to the seat's user only (its opt-in variant
	// alone), or there is no rule.
	Group string
	// Err is the backend's error, of kind usbdev.ErrPermission.
	Err error
}

func (e *AccessError) Error() string {
	return fmt.Sprintf("%s: no permission to open %s", e.Reader, e.Node)
}

func (e *AccessError) Unwrap() error { return e.Err }

// newAccessError describes err, a permission error opening info, with the
// rule found in dirs.
func newAccessError(info usbdev.Info, err error, dirs []string) *AccessError {
	e := &AccessError{Reader: USBName(info), Node: info.DevNode(), Err: err}
	e.Rule, e.Group = installedRule(dirs)
	return e
}

// asAccessError turns a permission error opening info into an
// *AccessError; other errors pass unchanged.
func asAccessError(info usbdev.Info, err error) error {
	var already *AccessError
	if err == nil || !errors.Is(err, usbdev.ErrPermission) || errors.As(err, &already) {
		return err
	}
	return newAccessError(info, err, ruleDirs())
}

var groupRE = regexp.MustCompile(`\bGROUP:?="([^"]+)"`)

// installedRule finds RuleName in dirs, in udev's order, and the group
// its uncommented rules give the devices to.
func installedRule(dirs []string) (path, group string) {
	for _, d := range dirs {
		p := filepath.Join(d, RuleName)
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if m := groupRE.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, "#") {
				group = m[1]
			}
		}
		return p, group
	}
	return "", ""
}

// CheckAccess says, before a command does anything else, whether this
// user may open the readers ts name: the first usb: target whose reader it
// may not open is an *AccessError. Anything else (no such reader, a sim:
// or file: target) is for the open to say, in its turn.
func (r *Readers) CheckAccess(ctx context.Context, ts []Spec) error {
	for _, t := range ts {
		if t.Scheme != USB {
			continue
		}
		info, err := r.find(ctx, t)
		if err != nil {
			continue
		}
		if err := asAccessError(info, r.access(info)); errors.As(err, new(*AccessError)) {
			return err
		}
	}
	return nil
}
