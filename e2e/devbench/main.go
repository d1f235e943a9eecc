//go:build e2e

// Command devbench measures the device side of usbflash alone in the e2e
// guest: it opens the QEMU reader through usbms over the backend of the
// build (usbms/backend: usbfs on Linux, libusb with -tags libusb),
// takes transfer buffers from LUN.AllocBuffers, and writes a zero image of
// -mib MiB with WRITE commands of each -xfer size, printing MB/s and the
// CPU seconds (user+system, getrusage) of the process. It is the Go
// counterpart of e2e/testdata/zcprobe.c, the bare C loop over libusb.
//
// usage: devbench -serial S [-mib 128] [-xfer 1,4,8] [-bufs 1] [-cpuprofile F]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/backend"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

func main() {
	serial := flag.String("serial", "", "iSerialNumber of the QEMU reader (46f4:0001)")
	mib := flag.Int("mib", 128, "MiB to write per transfer size")
	xfers := flag.String("xfer", "1,4,8", "transfer sizes in MiB, comma-separated")
	bufs := flag.Int("bufs", 1, "buffers to cycle through, as zcprobe's NBUF")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "devbench:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "devbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*serial, *mib, *xfers, *bufs); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "devbench:", err)
		os.Exit(1)
	}
}

func run(serial string, mib int, xfers string, nbuf int) error {
	ctx := context.Background()
	infos, err := backend.List(ctx)
	if err != nil {
		return err
	}
	var info usbdev.Info
	for _, i := range infos {
		if i.VID == 0x46f4 && i.PID == 0x0001 && i.Serial == serial && i.Supported {
			info = i
		}
	}
	if info.VID == 0 {
		return fmt.Errorf("no supported 46f4:0001 with serial %q", serial)
	}
	dev, err := backend.Open(ctx, info, usbdev.OpenOptions{})
	if err != nil {
		return err
	}
	defer dev.Close()
	lun, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Name: "devbench"}), 0, usbms.LUNOptions{})
	if err != nil {
		return err
	}
	total := int64(mib) << 20
	if max := lun.BlockCount() * int64(lun.BlockSize()); total > max {
		return fmt.Errorf("%d MiB does not fit the %d-byte medium", mib, max)
	}
	for _, s := range strings.Split(xfers, ",") {
		x, err := strconv.Atoi(s)
		if err != nil || x <= 0 {
			return fmt.Errorf("bad transfer size %q", s)
		}
		if err := write(ctx, lun, total, x<<20, nbuf); err != nil {
			return err
		}
	}
	return nil
}

func write(ctx context.Context, lun *usbms.LUN, total int64, size, nbuf int) error {
	bufs, kind, free, err := lun.AllocBuffers(nbuf, size)
	if err != nil {
		return err
	}
	defer free()
	u0, t0 := cpu(), time.Now()
	bs := int64(lun.BlockSize())
	for off, k := int64(0), 0; off < total; off, k = off+int64(size), (k+1)%nbuf {
		p := bufs[k][:min(int64(size), total-off)]
		if err := lun.WriteBlocks(ctx, off/bs, p); err != nil {
			return err
		}
	}
	wall, used := time.Since(t0).Seconds(), cpu()-u0
	fmt.Printf("DEVBENCH xfer=%dMiB bufs=%d kind=%q total=%dMiB: %.1f MB/s cpu %.2f s (%.2f s/GiB)\n",
		size>>20, nbuf, kind, total>>20, float64(total)/wall/1e6, used, used/(float64(total)/(1<<30)))
	return nil
}

// cpu is the process's user+system time in seconds.
func cpu() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
