#!/bin/busybox sh
# /init of the usbflash e2e guest. PID 1. Mounts the pseudo file systems,
# loads the USB host controller drivers and the 9p share, then runs the
# command scripts the host drops into /host/q/N.sh in order, writing
# N.out, N.err and N.rc next to them. The host ends the guest by sending a
# script that runs `poweroff -f`.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mkdir -p /proc /sys /dev /tmp /host /run /mnt
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o size=90% tmpfs /tmp
echo /bin/true > /proc/sys/kernel/modprobe
echo 1 > /proc/sys/kernel/panic_on_oops 2>/dev/null

fail() { echo "E2E-FATAL $*"; poweroff -f; sleep 5; }

/bin/loadmod virtio_pci 9pnet_virtio 9p || fail "cannot load 9p"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none host0 /host || fail "cannot mount host share"

# The per-run bits (usbflash binary, its shared libraries) come from the share.
# The binary's loader is /lib64/ld-linux-x86-64.so.2 or
# /lib/ld-linux-aarch64.so.1; LD_LIBRARY_PATH finds the rest.
# Copied, not linked: a real host runs usbflash from a local disk, and
# every page fault into a file on the 9p share is a round trip to the host
# (half a second of start-up under TCG), which would be charged to usbflash
# in bench-e2e and not to busybox's dd.
# A static usbflash brings none; a probe or tool shipped after boot puts
# its libraries in /host/lib, searched after the copies.
if ls /host/lib/* >/dev/null 2>&1; then
	mkdir -p /lib64 /usr/local/lib
	cp /host/lib/* /usr/local/lib/
	for f in /usr/local/lib/*; do ln -sf "$f" /lib64/; ln -sf "$f" /lib/; done
fi
export LD_LIBRARY_PATH=/usr/local/lib:/host/lib
[ -x /host/bin/usbflash ] && cp /host/bin/usbflash /bin/usbflash

# Host controllers (the emulated readers hang off them). usb-storage is not
# loaded: scenarios that want the kernel path call `loadmod usb-storage`.
for c in $(cat /host/controllers 2>/dev/null); do /bin/loadmod "$c" || fail "cannot load $c"; done

# Wait until the host's emulated readers have enumerated (the host writes
# how many USB devices of QEMU's 46f4 vendor it attached).
want=$(cat /host/usb_devices 2>/dev/null || echo 0)
i=0
while [ "$(cat /sys/bus/usb/devices/*/idVendor 2>/dev/null | grep -c 46f4)" -lt "$want" ] && [ $i -lt 600 ]; do
	usleep 50000; i=$((i+1))
done
echo "E2E-READY $(cut -d' ' -f1 /proc/uptime)"
n=0
while :; do
	s=/host/q/$n.sh
	if [ -f "$s" ]; then
		( cd /tmp && sh "$s" >"/host/q/$n.out" 2>"/host/q/$n.err" </dev/null )
		rc=$?
		echo "$rc" >"/host/q/$n.rc.tmp" && mv "/host/q/$n.rc.tmp" "/host/q/$n.rc"
		echo "E2E-RC $n $rc"
		n=$((n+1))
	else
		usleep 20000
	fi
done
