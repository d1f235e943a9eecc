#!/bin/sh
# usbserial /sys/block/sdX: the USB serial of the device behind a disk.
p=$(readlink -f "$1/device")
while [ "$p" != / ] && [ ! -f "$p/serial" ]; do p=$(dirname "$p"); done
[ -f "$p/serial" ] && cat "$p/serial"
