package osimage

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// RaspiosBoot is what a Raspberry Pi OS (Bookworm) boot partition holds
// that a customisation reads: its format is told by them.
var RaspiosBoot = map[string]string{
	"cmdline.txt": "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait quiet init=/usr/lib/raspberrypi-sys-mods/firstboot\n",
	"config.txt":  "# For more options\n#dtparam=i2c_arm=on\ndtparam=audio=on\n",
	"issue.txt":   "Raspberry Pi reference 2024-11-19\n",
}

// Bootable is a disk image shaped like a Raspberry Pi OS image: an MBR, a
// FAT32 boot partition of bootSize bytes at bootStart made by mkfs.fat
// (dosfstools) holding files (mcopy, mtools), and a second partition of
// rootSize bytes of Generate's data. dir holds the tools' scratch files.
func Bootable(dir string, bootStart, bootSize, rootSize int64, files map[string]string, seed uint64) ([]byte, error) {
	part := filepath.Join(dir, "boot.part")
	os.Remove(part)
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1") // a small FAT32, as tests make
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", name, err, out)
		}
		return nil
	}
	if err := run("mkfs.fat", "-C", "-F", "32", "-n", "bootfs", part, strconv.FormatInt(bootSize>>10, 10)); err != nil {
		return nil, err
	}
	for name, content := range files {
		f := filepath.Join(dir, "boot.file")
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			return nil, err
		}
		if err := run("mcopy", "-o", "-i", part, f, "::"+name); err != nil {
			return nil, err
		}
	}
	boot, err := os.ReadFile(part)
	if err != nil {
		return nil, err
	}
	img := make([]byte, bootStart+bootSize+rootSize)
	copy(img[bootStart:], boot)
	copy(img[bootStart+bootSize:], Generate(rootSize, seed))
	for i, p := range [][3]int64{{0x0c, bootStart, bootSize}, {0x83, bootStart + bootSize, rootSize}} {
		e := img[446+16*i:]
		e[4] = byte(p[0])
		binary.LittleEndian.PutUint32(e[8:], uint32(p[1]/512))
		binary.LittleEndian.PutUint32(e[12:], uint32(p[2]/512))
	}
	img[510], img[511] = 0x55, 0xAA
	return img, nil
}
