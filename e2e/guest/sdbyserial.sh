#!/bin/sh
# sdbyserial SERIAL [LUN]: the sdX name of the kernel disk behind the USB
# reader with that serial (LUN 0 unless given), waiting up to 10 s for it.
i=0
while [ $i -lt 100 ]; do
	for d in /sys/block/sd*; do
		[ -e "$d" ] || continue
		[ "$(usbserial "$d")" = "$1" ] || continue
		case "$(basename "$(readlink "$d/device")")" in *:"${2:-0}") basename "$d"; exit 0 ;; esac
	done
	usleep 100000; i=$((i+1))
done
echo "sdbyserial: no disk for $1" >&2
exit 1
