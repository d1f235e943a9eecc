#!/bin/sh
# After install: the group 70-usbflash.rules opens readers to exists,
# created empty (an administrator adds the users who write cards), and udev
# applies the rule to the readers attached now, where it runs; a container
# or chroot without udev has nothing to reload. Under dpkg --root
# ($DPKG_ROOT) the group goes into that root's /etc/group.
set -e
group=usbflash
root=${DPKG_ROOT:-}
warn() { echo "usbflash: could not create the group $group: readers stay root's until it exists" >&2; }
# Under a --root, groupadd itself finds whether the group is there
# (--force: it is no error); nothing here reads /etc/group.
if [ -n "$root" ] || ! getent group "$group" >/dev/null 2>&1; then
	if command -v groupadd >/dev/null 2>&1; then
		groupadd --force --system ${root:+--prefix "$root"} "$group" || warn
	elif [ -z "$root" ] && command -v addgroup >/dev/null 2>&1; then
		addgroup -S "$group" || warn # busybox (Alpine)
	fi
fi
if command -v udevadm >/dev/null 2>&1 && udevadm control --reload-rules >/dev/null 2>&1; then
	udevadm trigger --subsystem-match=usb --action=change >/dev/null 2>&1 || true
fi
exit 0
