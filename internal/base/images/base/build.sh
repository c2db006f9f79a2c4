#!/usr/bin/env bash
# build.sh OUT.tar: the root file system of fencecheck's Debian base image.
#
# debootstrap makes a minimal Debian root file system from Debian's own package
# mirror, apt adds the servers of the resources (PostgreSQL 15, nginx for the
# fencing proxy's WebDAV store, PgBouncer for the pg-advisory-pgbouncer
# targets) with their services kept from starting, and
# this script packs it into OUT.tar; `fencecheck images build` then imports
# the tar as an image (no registry is involved). This file is part of the
# base image's content hash (images/images.go), so changing the package
# list here makes fencecheck rebuild the base and every image built on it.
#
# Needs root, debootstrap and a reachable Debian mirror
# (FENCECHECK_DEBIAN_MIRROR, default http://deb.debian.org/debian).
set -euo pipefail

out=${1:?usage: build.sh OUT.tar}
suite=bookworm
mirror=${FENCECHECK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=iptables,iproute2,procps,redis-server,ca-certificates,libfaketime
# Resources: installed by apt in the new root, where policy-rc.d keeps
# their services from starting.
resource_packages="postgresql-15 nginx pgbouncer"

if [ "$(id -u)" != 0 ]; then
	echo "build.sh: debootstrap needs root" >&2
	exit 1
fi
command -v debootstrap >/dev/null || {
	echo "build.sh: debootstrap is not installed (apt-get install debootstrap)" >&2
	exit 1
}

root=$(mktemp -d /tmp/fencecheck-base.XXXXXX)
# mktemp makes the directory 0700: the image's root must be 0755, or no
# user but root can reach a file in it (postgres runs initdb as its own).
chmod 755 "$root"
cleanup() {
	umount "$root/dev/shm" "$root/proc" 2>/dev/null || true
	rm -rf "$root"
}
trap cleanup EXIT

debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >&2

mount -t proc proc "$root/proc"
mkdir -p "$root/dev/shm"
mount -t tmpfs shm "$root/dev/shm"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -q -y update >&2
# shellcheck disable=SC2086
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -q -y install --no-install-recommends $resource_packages >&2
rm -f "$root/usr/sbin/policy-rc.d"
umount "$root/dev/shm" "$root/proc"

# PostgreSQL: the package's cluster "main", reachable from the run's network
# without a password (the network is the run's own, private bridge).
test -d "$root/var/lib/postgresql/15/main"
mkdir -p "$root/etc/fencecheck"
cat >"$root/etc/fencecheck/pg_hba.conf" <<'HBA'
local all all trust
host all all 0.0.0.0/0 trust
HBA

# Smaller image: no package cache, no apt lists, no docs.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*

tar --numeric-owner -C "$root" -cf "$out" .
