#!/usr/bin/env bash
# A Python base image for the Dockerfile (--build-arg BASE_IMAGE=...) where no container registry is
# reachable: Debian bookworm's minimal root file system from Debian's archive (debootstrap), with Python 3.11,
# venv, ca-certificates and useradd, committed into buildah's local storage. Needs root, debootstrap, buildah.
#
#   deploy/base-image.sh [IMAGE] [MIRROR]     # default IMAGE localhost/cometa-base:bookworm
#   buildah build --build-arg BASE_IMAGE=localhost/cometa-base:bookworm --build-arg PRELOAD_MODELS= -t cometa .
set -euo pipefail
IMAGE="${1:-localhost/cometa-base:bookworm}"
MIRROR="${2:-http://deb.debian.org/debian}"
if buildah inspect --type image "$IMAGE" >/dev/null 2>&1; then
  echo "$IMAGE exists"
  exit 0
fi
ROOTFS="$(mktemp -d)"
trap 'rm -rf "$ROOTFS"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3,ca-certificates,passwd \
  bookworm "$ROOTFS" "$MIRROR" >/dev/null
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
CTR="$(buildah from scratch)"
MNT="$(buildah mount "$CTR")"
cp -a "$ROOTFS"/. "$MNT"/
buildah umount "$CTR" >/dev/null
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
  --cmd python3 "$CTR"
buildah commit --quiet --rm "$CTR" "$IMAGE" >/dev/null
echo "$IMAGE built"
