#!/usr/bin/env bash
# build.sh OUT.tar: the root file system of fencecheck's Debian base image.
#
# debootstrap makes a minimal Debian root file system from Debian's own package
# mirror and this script packs it into OUT.tar; `fencecheck images build` then
# imports the tar as an image (no registry is involved). This file is part of
# the base image's content hash (images/images.go), so changing the package
# list here makes fencecheck rebuild the base and every image built on it.
#
# Needs root, debootstrap and a reachable Debian mirror
# (FENCECHECK_DEBIAN_MIRROR, default http://deb.debian.org/debian).
set -euo pipefail

out=${1:?usage: build.sh OUT.tar}
suite=bookworm
mirror=${FENCECHECK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=iptables,iproute2,procps,redis-server,ca-certificates,libfaketime

if [ "$(id -u)" != 0 ]; then
	echo "build.sh: debootstrap needs root" >&2
	exit 1
fi
command -v debootstrap >/dev/null || {
	echo "build.sh: debootstrap is not installed (apt-get install debootstrap)" >&2
	exit 1
}

root=$(mktemp -d /tmp/fencecheck-base.XXXXXX)
trap 'rm -rf "$root"' EXIT

debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >&2

# Smaller image: no package cache, no apt lists, no docs.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*

tar --numeric-owner -C "$root" -cf "$out" .
