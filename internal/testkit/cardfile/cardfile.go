// Package cardfile is for tests of simulated readers whose cards come and
// go (sim.OpenSlots, drive.SimBus): a card file made, grown or emptied as
// a person puts a card in or takes it out.
package cardfile

import (
	"os"
	"testing"
)

// Size makes the card file at path size bytes, creating it when missing
// (sparse); 0 is an empty slot.
func Size(t testing.TB, path string, size int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
