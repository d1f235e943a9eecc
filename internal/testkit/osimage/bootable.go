package osimage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
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
	return BootableAs(dir, Layout{}, bootStart, bootSize, rootSize, files, seed)
}

// Layout is how BootableAs makes its disk: the boot partition's FAT
// ("12", "16", "32"; "": 32) and its partition table (MBR, or a GPT with
// its backup in the last 33 blocks, past the root partition).
type Layout struct {
	FAT string
	GPT bool
	// ESP makes the FAT an EFI System Partition (MBR type 0xEF, or the
	// GPT type), as a cloud image's or an installer's only FAT; with a
	// GPT, the root's entry comes first, as in a generic cloud image.
	ESP bool
}

// BootableAs is Bootable with the layout l.
func BootableAs(dir string, l Layout, bootStart, bootSize, rootSize int64, files map[string]string, seed uint64) ([]byte, error) {
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
	fat := l.FAT
	if fat == "" {
		fat = "32"
	}
	if err := run("mkfs.fat", "-C", "-F", fat, "-n", "bootfs", part, strconv.FormatInt(bootSize>>10, 10)); err != nil {
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
	tail := int64(0)
	if l.GPT {
		tail = 33 * 512
	}
	img := make([]byte, bootStart+bootSize+rootSize+tail)
	copy(img[bootStart:], boot)
	copy(img[bootStart+bootSize:], Generate(rootSize, seed))
	if l.GPT {
		putGPT(img, [][2]int64{{bootStart, bootSize}, {bootStart + bootSize, rootSize}}, l.ESP)
		return img, nil
	}
	fatType := int64(0x0c)
	if l.ESP {
		fatType = 0xEF
	}
	for i, p := range [][3]int64{{fatType, bootStart, bootSize}, {0x83, bootStart + bootSize, rootSize}} {
		e := img[446+16*i:]
		e[4] = byte(p[0])
		binary.LittleEndian.PutUint32(e[8:], uint32(p[1]/512))
		binary.LittleEndian.PutUint32(e[12:], uint32(p[2]/512))
	}
	img[510], img[511] = 0x55, 0xAA
	return img, nil
}

// putGPT writes a protective MBR, a GPT at LBA 1 (entries from LBA 2) and
// its backup in the last 33 blocks, listing parts ([start, size] in bytes):
// the first a FAT ("Microsoft basic data"), the others Linux filesystems;
// with esp, the FAT an EFI System Partition listed after the others.
func putGPT(img []byte, parts [][2]int64, esp bool) {
	const bs = 512
	blocks := int64(len(img)) / bs
	mbr := img[446:]
	mbr[4] = 0xEE
	binary.LittleEndian.PutUint32(mbr[8:], 1)
	binary.LittleEndian.PutUint32(mbr[12:], uint32(min(blocks-1, 0xFFFFFFFF)))
	img[510], img[511] = 0x55, 0xAA
	entries := make([]byte, 128*128)
	fat := []byte{0xA2, 0xA0, 0xD0, 0xEB, 0xE5, 0xB9, 0x33, 0x44, 0x87, 0xC0, 0x68, 0xB6, 0xB7, 0x26, 0x99, 0xC7}
	linux := []byte{0xAF, 0x3D, 0xC6, 0x0F, 0x83, 0x84, 0x72, 0x47, 0x8E, 0x79, 0x3D, 0x69, 0xD8, 0x47, 0x7D, 0xE4}
	if esp {
		fat = []byte{0x28, 0x73, 0x2A, 0xC1, 0x1F, 0xF8, 0xD2, 0x11, 0xBA, 0x4B, 0x00, 0xA0, 0xC9, 0x3E, 0xC9, 0x3B}
		parts = append(parts[1:], parts[0])
	}
	for i, p := range parts {
		e := entries[128*i:]
		isFAT := i == 0
		if esp {
			isFAT = i == len(parts)-1
		}
		if isFAT {
			copy(e, fat)
		} else {
			copy(e, linux)
		}
		e[16], e[17] = byte(i+1), 0x5A // a unique partition GUID
		binary.LittleEndian.PutUint64(e[32:], uint64(p[0]/bs))
		binary.LittleEndian.PutUint64(e[40:], uint64((p[0]+p[1])/bs-1))
	}
	crc := crc32.ChecksumIEEE(entries)
	header := func(my, alt, entriesAt int64) []byte {
		h := make([]byte, bs)
		copy(h, "EFI PART")
		binary.LittleEndian.PutUint32(h[8:], 0x00010000)
		binary.LittleEndian.PutUint32(h[12:], 92)
		binary.LittleEndian.PutUint64(h[24:], uint64(my))
		binary.LittleEndian.PutUint64(h[32:], uint64(alt))
		binary.LittleEndian.PutUint64(h[40:], 34)
		binary.LittleEndian.PutUint64(h[48:], uint64(blocks-34))
		h[56], h[57] = 0x55, 0x53 // a disk GUID that is not zero
		binary.LittleEndian.PutUint64(h[72:], uint64(entriesAt))
		binary.LittleEndian.PutUint32(h[80:], 128)
		binary.LittleEndian.PutUint32(h[84:], 128)
		binary.LittleEndian.PutUint32(h[88:], crc)
		binary.LittleEndian.PutUint32(h[16:], crc32.ChecksumIEEE(h[:92]))
		return h
	}
	copy(img[bs:], header(1, blocks-1, 2))
	copy(img[2*bs:], entries)
	copy(img[(blocks-33)*bs:], entries)
	copy(img[(blocks-1)*bs:], header(blocks-1, 1, blocks-33))
}
