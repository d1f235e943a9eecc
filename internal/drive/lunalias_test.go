package drive

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// TestOwnMedium: a slot of a multi-LUN reader is opened for writing only
// when no lower LUN answers for its medium; when a higher one does, it is
// said. Whatever is found, every card holds what it held.
func TestOwnMedium(t *testing.T) {
	const size = 1 << 20
	for _, tc := range []struct {
		name     string
		opts     string
		readOnly bool
		slot0    []byte // LUN 0's card; LUN 1 is blank memory unless the reader ignores the LUN
		refused  bool
		told     bool // NoticeOneMedium
	}{
		{"ignores the LUN, LUN 1 chosen", "luns=2&ignore-lun=1&lun=1", false, make([]byte, size), true, false},
		{"ignores the LUN, LUN 1 chosen, a card with data", "luns=2&ignore-lun=1&lun=1", false, testpattern.Bytes(size, 3), true, false},
		{"ignores the LUN, LUN 0 chosen", "luns=2&ignore-lun=1&lun=0", false, make([]byte, size), false, true},
		{"ignores the LUN, LUN 1 opened to read", "luns=2&ignore-lun=1&lun=1", true, make([]byte, size), false, false},
		{"two blank cards alike, LUN 1 chosen", "luns=2&lun=1", false, make([]byte, size), false, false},
		{"two cards that differ, LUN 1 chosen", "luns=2&lun=1", false, testpattern.Bytes(size, 4), false, false},
		{"one LUN", "", false, make([]byte, size), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, spec := simCard(t, tc.slot0, tc.opts)
			var mu sync.Mutex
			var told []observe.Notice
			d, err := Open(context.Background(), spec, Options{ReadOnly: tc.readOnly, OnNotice: func(_ string, n observe.Notice) {
				mu.Lock()
				defer mu.Unlock()
				if n.Kind == observe.NoticeOneMedium {
					told = append(told, n)
				}
			}})
			switch {
			case tc.refused && (failure.Of(err) != failure.Refused || !errors.Is(err, ErrOneMedium)):
				t.Errorf("Open = %v, want a refusal: two LUNs, one medium", err)
			case !tc.refused && err != nil:
				t.Errorf("Open = %v", err)
			}
			if d != nil {
				d.Close()
			}
			if (len(told) > 0) != tc.told {
				t.Errorf("notices %v, want one: %v", told, tc.told)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, tc.slot0) {
				t.Error("LUN 0's card changed")
			}
		})
	}
}
