package customize

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/parttable"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/osimage"
)

// espImage is an image whose only FAT is an EFI System Partition: an MBR
// with the ESP (type 0xEF) first and a Linux root after it, as
// memtest86+'s hybrid ISO and many installers; or a GPT whose first entry
// is the root and second the ESP, as a generic cloud image.
func espImage(t *testing.T, gpt bool) []byte {
	t.Helper()
	files := map[string]string{"BOOTX64.EFI": "MZ an EFI application", "grub.cfg": "set root=(hd0,gpt1)\n"}
	img, err := osimage.BootableAs(t.TempDir(), osimage.Layout{FAT: "12", GPT: gpt, ESP: true}, 1<<20, 4<<20, 2<<20, files, 3)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// card is img at the start of a disk of size bytes, as written.
func card(img []byte, size int) memVol {
	d := make(memVol, size)
	copy(d, img)
	return d
}

// TestApplyESP: a cloud-init customisation of an image whose only FAT is an
// EFI System Partition writes its seed where cloud-init reads it, a new
// FAT12 partition labelled CIDATA after the last one (the GPT's backup
// moved to the disk's end), and says so; the ESP gets nothing. Without
// room on the disk, or a free entry, it is refused before anything is
// written; settings only a Raspberry Pi's boot partition takes are refused.
func TestApplyESP(t *testing.T) {
	for _, gpt := range []bool{false, true} {
		name := map[bool]string{false: "MBR", true: "GPT"}[gpt]
		t.Run(name, func(t *testing.T) {
			img := espImage(t, gpt)
			disk := card(img, len(img)+16<<20)
			c := Config{Hostname: "cloud", SSHKeys: []string{keyEd25519 + " me"}, WiFi: WiFi{SSID: "net", Password: "passphrase"}, InitFormat: "cloudinit"}
			res, err := Apply(disk, 512, c, Options{Now: fixedNow})
			if err != nil {
				t.Fatal(err)
			}
			if res.Format != FormatCloudInit || !strings.Contains(res.Where, "labelled CIDATA") || !strings.Contains(res.Describe(), "CIDATA") {
				t.Fatalf("result %+v: %s", res, res.Describe())
			}
			parts, err := parttable.List(func(off int64, b []byte) error { copy(b, disk[off:]); return nil }, 512, int64(len(disk)))
			if err != nil || len(parts) != 3 {
				t.Fatalf("partitions %+v, %v", parts, err)
			}
			seed := parts[2]
			if gpt {
				seed = parts[1] // the first free entry, between the root's and the ESP's
				if seed.Number != 2 && seed.Number != 3 {
					t.Fatalf("partitions %+v", parts)
				}
				out, err := exec.Command("sfdisk", "--verify", writeTemp(t, disk)).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "No errors detected") {
					t.Errorf("sfdisk --verify: %v\n%s", err, out)
				}
			}
			for _, p := range parts {
				if p.Start >= int64(len(img)) {
					seed = p
				}
			}
			if seed.Start < int64(len(img)) || seed.Start%(1<<20) != 0 || seed.Size != cidataSize {
				t.Fatalf("the CIDATA partition %+v, the image ends at %d", seed, len(img))
			}
			part := writeTemp(t, disk[seed.Start:seed.Start+seed.Size])
			run(t, "fsck.fat", "-n", part)
			if out, err := exec.Command("blkid", "-p", "-o", "value", "-s", "LABEL", part).Output(); err != nil || strings.TrimSpace(string(out)) != "CIDATA" {
				t.Errorf("blkid LABEL: %q, %v", out, err)
			}
			for _, f := range []string{"meta-data", "user-data", "network-config"} {
				text := run(t, "mtype", "-i", part, "::"+f)
				if f == "user-data" {
					checkCloudConfig(t, []byte(text))
				}
			}
			// The ESP holds what it held.
			esp := parts[0]
			if gpt {
				esp = parts[len(parts)-1]
				for _, p := range parts {
					if p.ESP() {
						esp = p
					}
				}
			}
			if !bytes.Equal(disk[esp.Start:esp.Start+esp.Size], img[esp.Start:esp.Start+esp.Size]) {
				t.Error("the ESP was changed")
			}

			// The image alone: no room after its last partition.
			whole := card(img, len(img))
			_, err = Apply(whole, 512, c, Options{Now: fixedNow})
			if !errors.Is(err, ErrNoRoom) || failure.Of(err) != failure.Refused || !bytes.Equal(whole, img) {
				t.Errorf("no room: %v (class %v), unchanged %v", err, failure.Of(err), bytes.Equal(whole, img))
			}
			factsonly.Check(t, err.Error())
			// Inspected before a card is known: the room it needs is said,
			// and a card is held to it.
			res, err = Inspect(card(img, len(img)), 512, c)
			if err != nil || res.Needs <= int64(len(img)) || res.Fits(res.Needs) != nil || !errors.Is(res.Fits(res.Needs-1), ErrNoRoom) {
				t.Errorf("Inspect: %+v, %v", res, err)
			}
		})
	}
	img := espImage(t, false)
	for _, tc := range []struct {
		name string
		c    Config
		err  error
	}{
		{"auto", Config{Hostname: "h"}, ErrUnrecognised},
		{"rpi-preseed", Config{Hostname: "h", InitFormat: "rpi-preseed"}, ErrESP},
		{"config.txt", Config{Hostname: "h", InitFormat: "cloudinit", ConfigTxt: []string{"enable_uart=1"}}, ErrESP},
		{"systemd", Config{Hostname: "h", InitFormat: "systemd"}, ErrNoCmdline},
	} {
		disk := card(img, len(img)+16<<20)
		_, err := Apply(disk, 512, tc.c, Options{Now: fixedNow})
		if !errors.Is(err, tc.err) || failure.Of(err) != failure.Refused || !bytes.Equal(disk[:len(img)], img) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if err != nil {
			factsonly.Check(t, err.Error())
		}
	}
	// Four MBR entries used: no place for a fifth.
	full := card(img, len(img)+16<<20)
	for i := 2; i < 4; i++ {
		e := full[446+16*i:]
		e[4] = 0x83
		binary.LittleEndian.PutUint32(e[8:], uint32(len(img)/512-8+i))
		binary.LittleEndian.PutUint32(e[12:], 1)
	}
	if _, err := Apply(full, 512, Config{Hostname: "h", InitFormat: "cloudinit"}, Options{}); !errors.Is(err, ErrNoSlot) {
		t.Errorf("four entries: %v", err)
	}
}

// TestNoFAT: a disk none of whose partitions is a FAT is refused with one
// fact, which names the partitions, and none of go-diskfs's words.
func TestNoFAT(t *testing.T) {
	img := espImage(t, false)
	img[446+4] = 0x83 // the FAT's partition said to be Linux's: not tried
	garbage := bytes.Clone(espImage(t, false))
	copy(garbage[1<<20:], bytes.Repeat([]byte{0xA5}, 4096)) // the ESP's boot sector overwritten
	for name, disk := range map[string][]byte{"no FAT type": img, "not a FAT": garbage} {
		_, err := Apply(memVol(disk), 512, Config{Hostname: "h"}, Options{})
		if !errors.Is(err, ErrNoFAT) || failure.Of(err) != failure.Refused {
			t.Fatalf("%s: %v", name, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || strings.Contains(strings.ToLower(msg), "sector") || !strings.Contains(msg, "partitions 1 (MBR type 0x") {
			t.Errorf("%s: %q", name, msg)
		}
		factsonly.Check(t, msg)
	}
}

// writeTemp writes b to a temporary file for a tool to read.
func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
