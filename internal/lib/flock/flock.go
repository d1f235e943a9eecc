// Package flock locks a target's file for the length of a run (flock(2),
// advisory, whole file), so two usbflash processes never write one card.
package flock

import "errors"

// ErrLocked means another open file description holds a conflicting lock:
// another usbflash, or another program that locks the file.
var ErrLocked = errors.New("in use by another usbflash (or another program)")
