#!/bin/sh
# loadmod NAME...: insmod module NAME and its dependencies in the order the
# host resolved them when it built the initramfs (/lib/modules/groups/NAME
# lists "path.ko [params]" lines, dependencies first).
for m in "$@"; do
	g=/lib/modules/groups/$m
	if [ ! -f "$g" ]; then echo "loadmod: no module group $m" >&2; exit 1; fi
	while read -r ko args; do
		n=$(basename "$ko" .ko | tr - _)
		if grep -q "^$n " /proc/modules; then continue; fi
		if ! insmod "/lib/modules/$ko" $args 2>/tmp/.insmod.err; then
			grep -q "File exists" /tmp/.insmod.err || { echo "loadmod $m: $ko: $(cat /tmp/.insmod.err)" >&2; exit 1; }
		fi
	done <"$g"
done
