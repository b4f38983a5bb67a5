#!/usr/bin/env bash
# Removes OpenMPI shared-memory segments (/dev/shm/vader_segment.*) left by
# this user's killed runs: a stale one whose name a new job reuses makes
# vader fail at start-up. Only files owned by the caller that no running
# process maps are removed, so other users' and running jobs' segments stay
# (the scripts used to delete every vader segment, which on a shared
# node deleted other jobs' segments). Prints what it removed.
#   deploy/clean-stale-shm.sh
set -euo pipefail
uid=$(id -u)
for segment in /dev/shm/vader_segment.*; do
  [ -f "$segment" ] || continue
  [ "$(stat -c %u "$segment")" = "$uid" ] || continue
  # A process that maps it names it in its maps (readable for our own processes).
  if grep -qsF "$segment" /proc/[0-9]*/maps; then continue; fi
  rm -f -- "$segment" && echo "clean-stale-shm: removed $segment (no running process maps it)" >&2
done
exit 0
