package failure

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

type deviceErr struct{}

func (deviceErr) Error() string { return "the reader went away" }
func (deviceErr) Class() Class  { return Device }

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, Unknown},
		{"plain", errors.New("x"), Unknown},
		{"own class", deviceErr{}, Device},
		{"wrapped by fmt", fmt.Errorf("write: %w", deviceErr{}), Device},
		{"outer class wins", Wrap(Verify, fmt.Errorf("x: %w", deviceErr{})), Verify},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), Interrupted},
		{"class beats cancel", Wrap(Device, context.Canceled), Device},
		{"setting", &SettingError{Setting: "transfer size", Err: errors.New("not a size")}, Usage},
		{"joined", errors.Join(errors.New("a"), deviceErr{}), Device},
		{"errorf", Errorf(Fake, "holds %d", 1), Fake},
		{"sentinel", fmt.Errorf("x: %w", New(Refused, "write-protected")), Refused},
		{"cancel joined to a class", errors.Join(context.Canceled, deviceErr{}), Device},
		{"cancel joined to nothing classed", errors.Join(context.Canceled, errors.New("a")), Interrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.err); got != tc.want {
				t.Errorf("Of = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		want  Class
	}{
		{"plain cause", errors.New("no answer"), Device},
		{"cause says its class", Wrap(Refused, errors.New("write-protected")), Refused},
		{"cancelled", fmt.Errorf("waiting: %w", context.Canceled), Interrupted},
		{"nil", nil, Device},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Within(Device, tc.cause); got != tc.want {
				t.Errorf("Within = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSettingOf(t *testing.T) {
	err := fmt.Errorf("open: %w", &SettingError{Setting: "buffers", Err: errors.New("at least 2")})
	if got := SettingOf(err); got != "buffers" {
		t.Errorf("SettingOf = %q", got)
	}
	if got := SettingOf(errors.New("x")); got != "" {
		t.Errorf("SettingOf(plain) = %q", got)
	}
	if Wrap(Device, nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
}
