// Command gendemo makes testdata/demo.img, the image behind demo.img.xz
// (make demo-image runs both lines):
//
//	go run ./testdata/gendemo > /tmp/demo.img
//	xz -T2 --block-size=8MiB -6 -c /tmp/demo.img > testdata/demo.img.xz
//
// The image is shaped as a Raspberry Pi OS image, small: an MBR whose two
// partitions end where the file ends; a FAT32 boot partition labelled
// bootfs at 4 MiB holding what Raspberry Pi OS's holds that a
// customisation reads (cmdline.txt, config.txt, issue.txt); an ext4 root
// partition labelled rootfs with a few files of /etc. It boots nothing:
// there is no kernel. The image is 46 MiB, not a whole number of MiB (its
// last transfer is a short one), and xz -T2 makes it six blocks, so the
// demo exercises the parallel decoder; mostly empty, it compresses to
// tens of KiB.
//
// It is the same bytes on every run with the same tools: the FAT is made
// by go-diskfs (its volume ID fixed, its timestamps SOURCE_DATE_EPOCH's),
// the ext4 by e2fsprogs' mke2fs and debugfs (its UUID, hash seed and time
// fixed); another e2fsprogs release may make a different, equally good,
// root.
package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat32"
)

const (
	sector    = 512
	bootStart = 4 << 20  // where Raspberry Pi OS puts its boot partition
	bootSize  = 36 << 20 // FAT32's 65525 clusters of 512 bytes, and room
	rootStart = bootStart + bootSize
	rootSize  = 6<<20 - 20<<10 // the image's end: not a whole MiB
	size      = rootStart + rootSize

	diskID = 0x75736266 // "usbf": the MBR's disk identifier, the PARTUUIDs' first part
	epoch  = 1732000000 // 2024-11-19: every timestamp in the image
)

// bootFiles are the boot partition's files: Raspberry Pi OS Bookworm's
// cmdline.txt (its root named by PARTUUID, as it is) and config.txt as it
// ships, issue.txt, and a note of what this image is.
var bootFiles = []struct{ name, text string }{
	{"cmdline.txt", fmt.Sprintf("console=serial0,115200 console=tty1 root=PARTUUID=%08x-02 rootfstype=ext4 fsck.repair=yes rootwait quiet init=/usr/lib/raspberrypi-sys-mods/firstboot\n", diskID)},
	{"config.txt", `# For more options and information see
# http://rptl.io/configtxt
# Some settings may impact device functionality. See link above for details

# Uncomment some or all of these to enable the optional hardware interfaces
#dtparam=i2c_arm=on
#dtparam=i2s=on
#dtparam=spi=on

# Enable audio (loads snd_bcm2835)
dtparam=audio=on

# Additional overlays and parameters are documented
# /boot/firmware/overlays/README

# Automatically load overlays for detected cameras
camera_auto_detect=1

# Automatically load overlays for detected DSI displays
display_auto_detect=1

# Automatically load initramfs files, if found
auto_initramfs=1

# Enable DRM VC4 V3D driver
dtoverlay=vc4-kms-v3d
max_framebuffers=2

# Don't have the firmware create an initial video= setting in cmdline.txt.
# Use the kernel's default instead.
disable_fw_kms_setup=1

# Run in 64-bit mode
arm_64bit=1

# Disable compensation for displays with overscan
disable_overscan=1

# Run as fast as firmware / board allows
arm_boost=1

[cm4]
# Enable host mode on the 2711 built-in XHCI USB controller.
# This line should be removed if the legacy DWC2 controller is required
# (e.g. for USB device mode) or if USB support is not required.
otg_mode=1

[cm5]
dtoverlay=dwc2,dr_mode=host

[all]
`},
	{"issue.txt", "Raspberry Pi reference 2024-11-19\nGenerated using pi-gen, https://github.com/RPi-Distro/pi-gen\n"},
	{"usbflash-demo.txt", "usbflash's demo image: shaped as Raspberry Pi OS's, with no kernel. See testdata/gendemo.\n"},
}

// rootFiles are the root partition's files.
var rootFiles = map[string]string{
	"etc/hostname":   "raspberrypi\n",
	"etc/hosts":      "127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n\n127.0.1.1\t\traspberrypi\n",
	"etc/os-release": "PRETTY_NAME=\"usbflash demo (shaped as Raspberry Pi OS)\"\nNAME=\"usbflash demo\"\nID=usbflash-demo\n",
	"etc/fstab":      fmt.Sprintf("proc /proc proc defaults 0 0\nPARTUUID=%08x-01 /boot/firmware vfat defaults 0 2\nPARTUUID=%08x-02 / ext4 defaults,noatime 0 1\n", diskID, diskID),
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gendemo:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	dir, err := os.MkdirTemp("", "gendemo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "demo.img")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	mbr := make([]byte, sector)
	binary.LittleEndian.PutUint32(mbr[440:], diskID)
	for i, p := range []struct {
		typ         byte
		start, size int64
	}{{0x0c, bootStart, bootSize}, {0x83, rootStart, rootSize}} {
		e := mbr[446+16*i:]
		e[1], e[2], e[3], e[5], e[6], e[7] = 0xFE, 0xFF, 0xFF, 0xFE, 0xFF, 0xFF // CHS: past what it can say
		e[4] = p.typ
		binary.LittleEndian.PutUint32(e[8:], uint32(p.start/sector))
		binary.LittleEndian.PutUint32(e[12:], uint32(p.size/sector))
	}
	mbr[510], mbr[511] = 0x55, 0xAA
	if _, err := f.WriteAt(mbr, 0); err != nil {
		return err
	}
	if err := boot(f); err != nil {
		return fmt.Errorf("the boot partition: %w", err)
	}
	root, err := rootFS(dir)
	if err != nil {
		return fmt.Errorf("the root partition: %w", err)
	}
	if _, err := f.WriteAt(root, rootStart); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(out, f)
	return err
}

// boot makes the FAT32 boot partition in f with go-diskfs.
func boot(f *os.File) error {
	// go-diskfs stamps files with SOURCE_DATE_EPOCH's time when it is set.
	if err := os.Setenv("SOURCE_DATE_EPOCH", fmt.Sprint(epoch)); err != nil {
		return err
	}
	fs, err := fat32.Create(file.New(f, false), bootSize, bootStart, sector, "bootfs", true)
	if err != nil {
		return err
	}
	for _, bf := range bootFiles {
		w, err := fs.OpenFile(bf.name, os.O_CREATE|os.O_RDWR)
		if err != nil {
			return err
		}
		if _, err := w.Write([]byte(bf.text)); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return countFree(f)
}

// countFree fills in the FSInfo sector's count of free clusters and the
// next free one, which go-diskfs leaves unknown (fsck.fat reports it).
func countFree(f *os.File) error {
	bs := make([]byte, sector)
	if _, err := f.ReadAt(bs, bootStart); err != nil {
		return err
	}
	reserved, perCluster := int64(binary.LittleEndian.Uint16(bs[14:])), int64(bs[13])
	fats, perFAT := int64(bs[16]), int64(binary.LittleEndian.Uint32(bs[36:]))
	total, info := int64(binary.LittleEndian.Uint32(bs[32:])), int64(binary.LittleEndian.Uint16(bs[48:]))
	clusters := (total - reserved - fats*perFAT) / perCluster
	table := make([]byte, perFAT*sector)
	if _, err := f.ReadAt(table, bootStart+reserved*sector); err != nil {
		return err
	}
	var free, next uint32 = 0, 0xFFFFFFFF
	for c := int64(2); c < clusters+2; c++ {
		if binary.LittleEndian.Uint32(table[4*c:])&0x0FFFFFFF == 0 {
			free++
			next = min(next, uint32(c))
		}
	}
	fsinfo := make([]byte, 8)
	binary.LittleEndian.PutUint32(fsinfo, free)
	binary.LittleEndian.PutUint32(fsinfo[4:], next)
	_, err := f.WriteAt(fsinfo, bootStart+info*sector+488)
	return err
}

// rootFS is an ext4 file system of rootSize bytes holding rootFiles, made
// by mke2fs and filled by debugfs, everything that would vary fixed (mke2fs
// -d would copy each file's change time, which cannot be set).
func rootFS(dir string) ([]byte, error) {
	img := filepath.Join(dir, "root.ext4")
	env := append(os.Environ(), fmt.Sprintf("E2FSPROGS_FAKE_TIME=%d", epoch))
	tool := func(stdin string, name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", name, err, out)
		}
		return nil
	}
	if err := tool("", "mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", "-L", "rootfs", "-U", "75736266-0002-4000-8000-000000000002",
		"-E", "hash_seed=75736266-0002-4000-8000-00000000000a,root_owner=0:0", "-N", "256", img, fmt.Sprint(rootSize/1024)); err != nil {
		return nil, err
	}
	script := []string{"mkdir etc"}
	names := make([]string, 0, len(rootFiles))
	for name := range rootFiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		local := filepath.Join(dir, fmt.Sprint("file", i))
		if err := os.WriteFile(local, []byte(rootFiles[name]), 0o644); err != nil {
			return nil, err
		}
		script = append(script, fmt.Sprintf("write %s %s", local, name))
	}
	if err := tool(strings.Join(script, "\n")+"\n", "debugfs", "-w", "-f", "-", img); err != nil {
		return nil, err
	}
	return os.ReadFile(img)
}
