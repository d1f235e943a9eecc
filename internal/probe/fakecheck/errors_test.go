package fakecheck

import "testing"

// TestFakeErrorSaysHowMuch: the claim, what holds and what the image
// needs are a true statement even when they round alike.
func TestFakeErrorSaysHowMuch(t *testing.T) {
	r := func(claimed, usable int64) *Result {
		return &Result{BlockSize: 512, Claimed: claimed, Usable: usable, Kind: Drop}
	}
	for _, tc := range []struct {
		name string
		err  *FakeError
		want string
	}{
		{"512 bytes short", &FakeError{Name: "sim:f.img", Result: r(100000256, 99999744)},
			"sim:f.img is fake: it claims 100000256 bytes but holds 99999744 bytes (LBA 0 to 195311); writes from LBA 195312 on are lost"},
		{"far apart", &FakeError{Name: "sim:f.img", Result: r(64<<30, 8<<30)},
			"sim:f.img is fake: it claims 68.7 GB but holds 8.59 GB (8589934592 bytes, LBA 0 to 16777215); writes from LBA 16777216 on are lost"},
		{"the image needs a few bytes more", &FakeError{Name: "sim:f.img", Result: r(64<<30, 8<<30), Need: 8<<30 + 512},
			"sim:f.img is fake: it claims 68.7 GB but holds 8.59 GB (8589934592 bytes, LBA 0 to 16777215); writes from LBA 16777216 on are lost; " +
				"the image needs 8589935104 bytes: nothing was written"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
