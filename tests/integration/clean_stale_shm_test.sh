#!/usr/bin/env bash
# deploy/clean-stale-shm.sh removes only this user's vader segments that no
# process maps: a stale one of ours goes; one a running process maps, and
# (as root) one owned by another user, stay.
#   clean_stale_shm_test.sh SOURCE_DIR
set -euo pipefail
source_dir=$1
[ -d /dev/shm ] && [ -w /dev/shm ] || { echo "clean_stale_shm_test: no writable /dev/shm (skipped)"; exit 77; }
prefix=/dev/shm/vader_segment.stalelearn-test.$$
stale=$prefix.stale live=$prefix.live other=$prefix.other
cleanup() { rm -f "$stale" "$live" "$other"; [ -n "${holder:-}" ] && kill "$holder" 2>/dev/null; true; }
trap cleanup EXIT
touch "$stale"
head -c 4096 /dev/zero >"$live"
# A process that maps the live segment (python's mmap) until killed.
python3 -c "import mmap, sys, time
f = open(sys.argv[1], 'r+b'); m = mmap.mmap(f.fileno(), 4096); print('mapped', flush=True); time.sleep(60)" "$live" \
  >"$prefix.ready" &
holder=$!
for _ in $(seq 100); do grep -q mapped "$prefix.ready" 2>/dev/null && break; sleep 0.05; done
rm -f "$prefix.ready"
if [ "$(id -u)" -eq 0 ]; then touch "$other" && chown nobody "$other"; fi
"$source_dir/deploy/clean-stale-shm.sh"
problems=()
[ ! -e "$stale" ] || problems+=("the stale segment of this user was not removed")
[ -e "$live" ] || problems+=("a segment a running process maps was removed")
if [ "$(id -u)" -eq 0 ] && [ ! -e "$other" ]; then problems+=("another user's segment was removed"); fi
if [ ${#problems[@]} -gt 0 ]; then printf 'clean_stale_shm_test: %s\n' "${problems[@]}" >&2; exit 1; fi
echo "clean_stale_shm_test: ok"
