package pipeline

import "testing"

// TestCapacityErrorSaysHowMuch: the two sizes are a true statement even
// when they round alike.
func TestCapacityErrorSaysHowMuch(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *CapacityError
		want string
	}{
		{"24 bytes short", &CapacityError{Device: "sim:tight.img", ImageSize: 33554456, Capacity: 33554432},
			"image is 33554456 bytes but sim:tight.img holds 33554432 bytes; nothing was written"},
		{"far apart", &CapacityError{Device: "sim:x", ImageSize: 8e9, Capacity: 4e9},
			"image is 8.00 GB but sim:x holds 4.00 GB; nothing was written"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
