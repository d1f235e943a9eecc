#!/bin/sh
# After install and removal: apply 70-usbflash.rules (or its absence) to
# the readers attached now, where udev runs; a container or chroot without
# udev has nothing to reload.
set -e
if command -v udevadm >/dev/null 2>&1 && udevadm control --reload-rules >/dev/null 2>&1; then
	udevadm trigger --subsystem-match=usb --action=change >/dev/null 2>&1 || true
fi
exit 0
