package session

import (
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
)

// TestCardsErrorPolicy: a session of several cards is partial when some
// succeeded; when all failed, of their class when they failed alike and a
// device failure when they failed differently.
func TestCardsErrorPolicy(t *testing.T) {
	verify := failure.Errorf(failure.Verify, "differs")
	refused := failure.Errorf(failure.Refused, "write-protected")
	for _, tc := range []struct {
		name    string
		e       CardsError
		partial bool
		class   failure.Class
	}{
		{"some succeeded", CardsError{Succeeded: 2, Failed: 1, Errs: []error{verify}}, true, failure.Verify},
		{"all alike", CardsError{Failed: 2, Errs: []error{verify, verify}}, false, failure.Verify},
		{"all stopped", CardsError{Failed: 2, Errs: []error{context.Canceled, context.Canceled}}, false, failure.Interrupted},
		{"all differently", CardsError{Failed: 2, Errs: []error{verify, refused}}, false, failure.Device},
		{"all unclassified", CardsError{Failed: 1, Errs: []error{errors.New("a bug")}}, false, failure.Unknown},
		{"none recorded", CardsError{}, false, failure.Device},
	} {
		if tc.e.Partial() != tc.partial || tc.e.Class() != tc.class || failure.Of(&tc.e) != tc.class && tc.class != failure.Unknown {
			t.Errorf("%s: partial %v, class %v; want %v, %v", tc.name, tc.e.Partial(), tc.e.Class(), tc.partial, tc.class)
		}
	}
}
