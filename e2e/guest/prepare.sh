#!/bin/sh
# Prepare (or check) the cached e2e guest: Debian kernel + vmlinux, busybox
# initramfs with modules, the KVM/TCG probe, and a build of usbflash.
# Cache: ${USBFLASH_E2E_CACHE:-$HOME/.cache/usbflash-e2e}.
set -e
cd "$(dirname "$0")/../.."
exec go test -tags e2e -count=1 -run '^TestPrepare$' -v ./e2e/
