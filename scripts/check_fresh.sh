#!/usr/bin/env bash
# Proves the README's two commands on a machine with nothing but a minimal Debian 12: builds a
# minbase root with debootstrap, clones the committed tree (HEAD) into it, and runs
# `bash scripts/demo.sh` then `bash scripts/test.sh` inside it with chroot, timing each.
# Packages installed by hand on this machine cannot hide a missing install step there.
#
#   sudo bash scripts/check_fresh.sh [root-dir]     (default /var/tmp/partita-fresh; needs root)
#
# The root is reused between runs only for its debootstrap stage (KEEP_ROOT=1 keeps it after
# the check); the project and everything apt installs for it are started from scratch each time.
set -euo pipefail
cd "$(dirname "$0")/.."
root="${1:-/var/tmp/partita-fresh}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
[ "$(id -u)" -eq 0 ] || { echo "check_fresh.sh: needs root (debootstrap, chroot, mount)" >&2; exit 2; }

if ! command -v debootstrap >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
fi

# Deletes the root, but never through a mount still attached (that would reach this machine's /dev).
remove_root() {
  if grep -q " $root/" /proc/mounts; then
    echo "check_fresh.sh: mounts under $root remain; not deleting it" >&2
    return 1
  fi
  rm -rf "$root"
}

base="$root.base.tar"
if [ ! -f "$base" ]; then
  echo "== debootstrap bookworm (minbase) into $root"
  remove_root
  debootstrap --variant=minbase --include=ca-certificates,git bookworm "$root" "$mirror" >/dev/null
  tar -C "$root" -cf "$base" .
else
  echo "== fresh root from $base"
  remove_root && mkdir -p "$root" && tar -C "$root" -xf "$base"
fi

cleanup() {
  for m in ccache dev/pts dev proc sys; do umount -l "$root/$m" 2>/dev/null || true; done
  [ "${KEEP_ROOT:-0}" = 1 ] || remove_root
}
trap cleanup EXIT
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# This machine's compiler cache is shared with the root (FRESH_CCACHE=0 turns that off): it
# holds compiler outputs only, and a missing header still fails at preprocessing, so it cannot
# hide a missing package; it saves a full build.
ccache_env=()
if [ "${FRESH_CCACHE:-1}" = 1 ] && [ -d "${HOME}/.cache/ccache" ]; then
  mkdir -p "$root/ccache" && mount --bind "${HOME}/.cache/ccache" "$root/ccache"
  ccache_env=(CCACHE_DIR=/ccache CCACHE_BASEDIR=/work CCACHE_COMPILERCHECK=content)
fi

# The committed tree only, as CI sees it: a clone, not a copy of the working tree.
git clone -q "$(pwd)" "$root/work/main"
# The conformance cases live beside the checkout (../shared), as on the real machines.
if [ -d ../shared/conformance ]; then
  mkdir -p "$root/work/shared" && cp -r ../shared/conformance "$root/work/shared/"
fi

run_in_root() {  # label, command
  local start=$SECONDS
  echo "== fresh root: $1"
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    "${ccache_env[@]}" bash -c "cd /work/main && $2"
  echo "== fresh root: $1 took $((SECONDS - start)) s"
}
run_in_root "README command 1 (bash scripts/demo.sh)" "bash scripts/demo.sh"
run_in_root "README command 2 (bash scripts/test.sh)" "bash scripts/test.sh"
echo "== check_fresh: both README commands passed on a fresh Debian 12 root"
