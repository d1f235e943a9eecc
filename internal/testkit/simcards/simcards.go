// Package simcards is for tests of sessions on simulated cards: the sim:
// targets of card files in a directory.
package simcards

import (
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
)

// Specs parses sim: targets of cards in dir ("name.img?options").
func Specs(t testing.TB, dir string, cards ...string) []drive.Spec {
	t.Helper()
	var specs []drive.Spec
	for _, c := range cards {
		spec, err := drive.Parse("sim:" + filepath.Join(dir, c))
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	return specs
}
