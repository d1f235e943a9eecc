#!/bin/sh
# After removal: udev forgets 70-usbflash.rules for the readers attached
# now, where it runs. The group usbflash stays, as a system group does: its
# members and the files it owns are the administrator's.
set -e
if command -v udevadm >/dev/null 2>&1 && udevadm control --reload-rules >/dev/null 2>&1; then
	udevadm trigger --subsystem-match=usb --action=change >/dev/null 2>&1 || true
fi
exit 0
