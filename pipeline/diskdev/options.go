package diskdev

// Options tune Open.
type Options struct {
	// ReadOnly opens the disk for reading only (verify, info, read):
	// nothing is locked exclusively and nothing is prepared for writing.
	ReadOnly bool
	// Release runs when the device closes, after the disk: what the
	// caller took for the length of the write (Windows's volume locks).
	Release func()
}
