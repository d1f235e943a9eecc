//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestFileTargetOnTmpfs: a new file: target on the guest's /tmp, a
// filesystem whose kernel (6.1) has no O_DIRECT for it and creates the
// file before it refuses the flag, is created and written (it was refused
// with "file exists"), and holds the image.
func TestFileTargetOnTmpfs(t *testing.T) {
	card := newCard(t, 8<<20)
	m := boot(t, MachineSpec{Controller: XHCI, Readers: []Reader{{Serial: "E2EFILE1", LUNs: []LUN{{Backing: card}}}}})
	img := makeImage(31, 3<<20+512)
	p := putImage(t, m, "f.img", img, "raw")
	guest(t, m, "cp "+p+" /tmp/f.img && rm -f /tmp/out.img && grep -E ' /tmp | / ' /proc/mounts")
	r := usbflash(t, m, 2*time.Minute, "write", "/tmp/f.img", "file:/tmp/out.img?size=4MiB", "--yes")
	wantCode(t, r, 0, "write to a new file on /tmp")
	guest(t, m, "cmp -n 3146240 /tmp/f.img /tmp/out.img && [ $(wc -c </tmp/out.img) = 4194304 ]")
}
