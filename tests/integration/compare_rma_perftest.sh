#!/usr/bin/env bash
# Compares `stalelearn bench rma` with ucx_perftest in the same run, at the
# same message size, one pair of processes each, over UCX's default transport
# (shared memory on one node). Runs are interleaved and repeated: on a shared
# machine other load only ever slows a run down, so the best of N is the
# figure compared (the median is printed too).
#
#   tests/integration/compare_rma_perftest.sh [--bin build/bin/stalelearn]
#       [--size 65536] [--ops "put get fadd"] [--repeats 5] [--iters 100000]
#       [--bench-args "--window 16"]
#
# Pairs: put <-> ucp_put_bw, get <-> ucp_get (bandwidth, MB/s = 10^6 B/s),
# fadd <-> ucp_fadd (operations per second, 8 bytes whatever --size says). ucx_perftest prints MiB/s in
# field 6 of its "Final:" line (x 1.048576 for MB/s) and msg/s in field 8.
# Exit status 0 if every run succeeded (the ratio itself is only reported).
set -euo pipefail

bin=""
size=65536
ops="put get fadd"
repeats=5
iters=100000
bench_args=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --ops) ops="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --bench-args) bench_args="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "compare_rma_perftest.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ -z "$bin" ]]; then
  for candidate in "$repo_root/build/bin/stalelearn" "$repo_root"/build*/bin/stalelearn; do
    if [[ -x "$candidate" ]]; then bin="$candidate"; break; fi
  done
fi
[[ -x "$bin" ]] || { echo "compare_rma_perftest.sh: no stalelearn binary (build it, or pass --bin)" >&2; exit 2; }
command -v ucx_perftest >/dev/null || { echo "compare_rma_perftest.sh: ucx_perftest not found (apt-get install ucx-utils)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "compare_rma_perftest.sh: mpirun not found" >&2; exit 2; }

export UCX_WARN_UNUSED_ENV_VARS=n
warmup=$(( iters / 10 ))
port=$(( 20000 + $$ % 20000 ))
mpirun_cmd=(mpirun -np 2 --allow-run-as-root --oversubscribe --bind-to none --timeout 120)

# ours OP -> "MB/s ops/s latency_us"
ours() {
  local json
  json="$("${mpirun_cmd[@]}" "$bin" bench rma --op "$1" --size "$size" --iters "$iters" --warmup "$warmup" \
          $bench_args --json </dev/null)"
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["bandwidth_mb_s"], r["rate_mops"]*1e6, r["latency_us"])' "$json"
}

# perftest TEST -> "MB/s ops/s latency_us" (server and client on this host)
perftest() {
  port=$(( port + 1 ))
  local test_size="$size"
  [[ "$1" == ucp_fadd ]] && test_size=8  # 64-bit atomics
  timeout 120 ucx_perftest -p "$port" >/dev/null 2>&1 &
  local server=$! final="" attempt
  for attempt in $(seq 1 50); do
    if final="$(timeout 120 ucx_perftest 127.0.0.1 -p "$port" -t "$1" -s "$test_size" -n "$iters" -w "$warmup" 2>/dev/null \
                | awk '/^Final:/ {print $6 * 1.048576, $8, $4}')" && [[ -n "$final" ]]; then
      break
    fi
    sleep 0.1  # the server is not listening yet
  done
  wait "$server" || true
  [[ -n "$final" ]] || { echo "compare_rma_perftest.sh: ucx_perftest -t $1 failed" >&2; return 1; }
  echo "$final"
}

# stats FIELD VALUES... -> "best median" (best = largest)
stats() {
  printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%s %s\n", v[NR], m}'
}

echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# stalelearn: $bin bench rma --size $size --iters $iters --warmup $warmup $bench_args (mpirun -np 2)"
echo "# ucx_perftest (UCX $(ucx_info -v | awk '/Version/ {print $3}')) -s $size -n $iters -w $warmup, server + client on 127.0.0.1"
printf '%-5s %-11s %-10s %16s %16s %16s %16s %8s\n' op perftest metric ours_best perftest_best ours_median perftest_median ratio
for op in $ops; do
  case "$op" in
    put) test=ucp_put_bw; field=1; metric=MB/s ;;
    get) test=ucp_get; field=1; metric=MB/s ;;
    fadd) test=ucp_fadd; field=2; metric=ops/s ;;
    *) echo "compare_rma_perftest.sh: unknown op '$op'" >&2; exit 2 ;;
  esac
  ours_values=(); theirs_values=(); ours_latency=(); theirs_latency=()
  for _ in $(seq 1 "$repeats"); do
    read -r -a o <<<"$(ours "$op")"
    read -r -a p <<<"$(perftest "$test")"
    ours_values+=("${o[$((field - 1))]}"); theirs_values+=("${p[$((field - 1))]}")
    ours_latency+=("${o[2]}"); theirs_latency+=("${p[2]}")
  done
  read -r ours_best ours_median <<<"$(stats "${ours_values[@]}")"
  read -r theirs_best theirs_median <<<"$(stats "${theirs_values[@]}")"
  ratio="$(awk -v a="$ours_best" -v b="$theirs_best" 'BEGIN {printf "%.3f", a / b}')"
  printf '%-5s %-11s %-10s %16.1f %16.1f %16.1f %16.1f %8s\n' "$op" "$test" "$metric" \
    "$ours_best" "$theirs_best" "$ours_median" "$theirs_median" "$ratio"
  echo "#   $op runs, ours: ${ours_values[*]} ($metric); latency us: ${ours_latency[*]}"
  echo "#   $op runs, ucx_perftest: ${theirs_values[*]} ($metric); latency us: ${theirs_latency[*]}"
done
