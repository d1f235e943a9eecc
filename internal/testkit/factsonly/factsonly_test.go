package factsonly

import "testing"

func TestAdvice(t *testing.T) {
	for _, tc := range []struct {
		msg    string
		advice bool
	}{
		{"write error on sim:card LUN 0, LBA 2048-4095: medium error (sense 3/0C/00)", false},
		{"no medium present (sense 2/3A/00)", false},
		{"opening /dev/bus/usb/001/005: no permission to open the USB device", false},
		{"xz: truncated: input ends at compressed byte 999 (after 1.5 KiB decoded): unexpected EOF", false},
		{"no medium: insert a card", true},
		{"the file is damaged: download it again and compare its checksum", true},
		{"no permission: run with sudo", true},
		{"pass --force to skip this check", true},
		{"Unplug and replug it", true},
		{`zip entry "os.img" is encrypted`, false},
		{"the device was running", false},
		{"insert a card", true},
	} {
		if got := len(Advice(tc.msg)) > 0; got != tc.advice {
			t.Errorf("Advice(%q) = %q, want advice: %v", tc.msg, Advice(tc.msg), tc.advice)
		}
	}
}
