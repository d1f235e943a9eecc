package usbdev

import (
	"reflect"
	"testing"
	"time"
)

func TestWithDefaults(t *testing.T) {
	got := OpenOptions{}.WithDefaults()
	want := OpenOptions{ControlTimeout: 5 * time.Second, OutStreamChunk: 1 << 20, OutStreamDepth: 4, ReenumerateTimeout: 10 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithDefaults = %+v, want %+v", got, want)
	}
	keep := OpenOptions{Force: true, ControlTimeout: time.Second, OutStreamChunk: 64 << 10, OutStreamDepth: 2, ReenumerateTimeout: time.Minute}
	if got := keep.WithDefaults(); !reflect.DeepEqual(got, keep) {
		t.Errorf("WithDefaults changed set fields: %+v", got)
	}
}
