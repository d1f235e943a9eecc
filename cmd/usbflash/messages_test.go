package main

import (
	"path/filepath"
	"strings"
	"testing"

	"usbflash/internal/factsonly"
)

// TestMessagesStateEachFactOnce pins the whole text a person reads for the
// common failures: the facts once (the target, the LBA range), then one
// piece of advice on its own line. TestAdviceTable holds every kind of
// error to the same.
func TestMessagesStateEachFactOnce(t *testing.T) {
	t.Parallel()
	img := testImage(3 << 20)
	tests := []struct {
		name   string
		format string // of the image
		cut    bool   // truncate the image file
		card   string // sim options
		code   int
		want   string // stderr, with CARD for the card's path
	}{
		{"unplugged mid-write", "raw", false, "?size=8MiB&fault=disconnect:after=1MiB", exitDevice,
			"usbflash: write failed on sim:CARD at LBA 0-2047 (1 MiB at byte offset 0): device disconnected\n" +
				"Reconnect the reader and run the command again.\n"},
		{"medium error", "raw", false, "?size=8MiB&fault=medium-error:lba=3000,persistent", exitDevice,
			"usbflash: write failed on sim:CARD at LBA 2048-4095 (1 MiB at byte offset 1048576): write error: the card is failing (sense 3/0C/00, information 3000)\n" +
				"Use another card.\n"},
		{"empty slot", "raw", false, "?size=8MiB&nomedium=1", exitDevice,
			"usbflash: no medium in sim:CARD LUN 0\n" +
				"Insert a card and run the command again.\n"},
		{"write-protected", "raw", false, "?size=8MiB&wp=1", exitRefused,
			"usbflash: sim:CARD is write-protected; nothing was written\n" +
				"Slide the card's lock switch to unlock it, or use another card.\n"},
		{"too large, known up front", "xz", false, "?size=2MiB", exitRefused,
			"usbflash: image is 3 MiB but sim:CARD holds 2 MiB; nothing was written\n" +
				"Use a larger card.\n"},
		{"too large, found at the end of the card", "gzip", false, "?size=2MiB", exitRefused,
			"usbflash: image is larger than sim:CARD (2 MiB): stopped at its end after writing 2 MiB, with the first transfer left zeroed so the card does not boot a truncated image\n" +
				"Use a larger card.\n"},
		{"corrupt image", "xz", true, "?size=8MiB", exitSource,
			"usbflash: reading the image at byte offset 1394371 (nothing usable was written to sim:CARD; the first transfer was left zeroed): " +
				"xz: truncated: input ends at compressed byte 177914 (after 1.3 MiB decoded): truncated xz data: unexpected end of input\n" +
				"The file is incomplete: download it again and compare its checksum.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := compress(t, tt.format, img)
			if tt.cut {
				data = data[:len(data)*2/3]
			}
			image := writeFile(t, "os.img", data)
			card := filepath.Join(t.TempDir(), "card.img")
			r := runCLI(t, "write", "--yes", image, "sim:"+card+tt.card)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d", r.code, tt.code)
			}
			if want := strings.ReplaceAll(tt.want, "CARD", card); r.stderr != want {
				t.Errorf("stderr\n%q\nwant\n%q", r.stderr, want)
			}
			// The facts line gives no advice: that is the next line's.
			factsonly.Check(t, strings.SplitN(r.stderr, "\n", 2)[0])
		})
	}
}
