#!/usr/bin/env bash
# The layering check (cmake/check_layers.sh) has teeth: it passes on a copy
# of the source tree, fails with one line for a declared layer edge no file
# uses, then with one line per wrong-way include planted in that copy, each
# naming the file, the include and the rule.
# Usage: layering_check_test.sh SOURCE_ROOT RULES_FILE
set -euo pipefail
ROOT=$1
RULES=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cp -r "$ROOT/framework" "$ROOT/backends" "$ROOT/apps" "$work/"
bash "$ROOT/cmake/check_layers.sh" "$RULES" "$work" || fail "the check fails on the unmodified tree"

# A declared edge nobody uses: data also declares metrics, which no file of data includes.
awk -F'|' -v OFS='|' '$1 == "data" { $3 = $3 " metrics" } 1' "$RULES" >"$work/unused.rules"
rc=0
out=$(bash "$ROOT/cmake/check_layers.sh" "$work/unused.rules" "$work" 2>&1) || rc=$?
echo "$out"
[ "$rc" -eq 1 ] || fail "expected exit code 1 with an unused declared edge, got $rc"
grep -qF "layering: layer data declares metrics in LAYERS, but none of its files includes a header of metrics" <<<"$out" ||
  fail "no line names the unused edge data -> metrics"
[ "$(grep -c '^layering: ' <<<"$out")" -eq 1 ] || fail "expected exactly 1 violation for the unused edge"

# One planted include per kind of rule, appended (so the line is the file's last).
plant() { echo "#include $2" >>"$work/$1"; echo "$1:$(wc -l <"$work/$1")"; }
up=$(plant framework/sync/wait_options.h '"framework/runtime/app.h"')        # a layer includes one above it
side=$(plant framework/model/hash64.h '"framework/data/catalog.h"')     # a layer includes a peer
backend=$(plant backends/timing/cost_model.h '"framework/metrics/work_counters.h"')  # a backend includes more than core+transport
mpi=$(plant framework/sync/wait_until.cc '<mpi.h>')                      # a system header only its owner may include
app=$(plant framework/runtime/train.cc '"apps/mf/register.h"')           # the framework names an app

rc=0
out=$(bash "$ROOT/cmake/check_layers.sh" "$RULES" "$work" 2>&1) || rc=$?
echo "$out"
[ "$rc" -eq 1 ] || fail "expected exit code 1 with planted wrong-way includes, got $rc"
expect() { grep -qF -- "$1" <<<"$out" || fail "no line contains: $1"; }
expect "layering: $up: includes \"framework/runtime/app.h\" (layer runtime), but layer sync may include only sync, core, transport, model, metrics"
expect "layering: $side: includes \"framework/data/catalog.h\" (layer data), but layer model may include only model, core"
expect "layering: $backend: includes \"framework/metrics/work_counters.h\" (layer metrics), but layer backend_timing may include only backend_timing, core, transport"
expect "layering: $mpi: includes <mpi.h>, which only layer mpi may include"
expect "layering: $app: includes \"apps/mf/register.h\" (layer apps), but layer runtime may include only"
lines=$(grep -c '^layering: ' <<<"$out")
[ "$lines" -eq 5 ] || fail "expected exactly 5 violations, got $lines"
echo "PASS: clean tree accepted, an unused declared edge and 5 planted wrong-way includes reported"
