#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# /init of the kernel-matrix initramfs (stage.sh): mount what the agent and
# libbpf need, run /t/guest.sh, power off. guest.sh's closing
# "N passed, N failed" line on the serial console is what run.sh reads; if
# it is missing (a panic, a hang, a crash of guest.sh) the host fails the leg.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
# libbpf 1.1 looks tracepoint ids up under debugfs
mount -t debugfs debugfs /sys/kernel/debug
echo "=== GUEST UP $(cut -d' ' -f1 /proc/uptime)s: $(uname -r)"
ip link set lo up
# run.sh's per-leg settings come on the kernel command line
for a in $(cat /proc/cmdline); do
	case $a in mm.capture=*) export MM_CAPTURE="${a#mm.capture=}" ;; esac
done
MM_T=/t MM_W=/tmp/km sh /t/guest.sh
echo "=== GUEST DONE $(cut -d' ' -f1 /proc/uptime)s (guest.sh exit $?)"
poweroff -f
