#!/usr/bin/env bash
# The mutation harness (issue 29): do the tests catch realistic bugs? Each
# mutant, tests/mutation/mutants/NAME.patch (a header, then a unified diff as
# `git diff` writes it; README.md), is applied to a scratch copy of the source
# tree, the targets it needs are built there, and the tests its header names
# run; it is caught when at least one of them runs and fails. Prints a row per
# mutant (name, area, caught/survived/invalid, seconds), then the totals and
# the whole time. Exit 0 only if every selected mutant was caught.
#
# Usage: tests/mutation/run.sh [--list] [--check] [NAME...]
#   NAME...   the mutants to run (default: all)
#   --list    print each mutant's name, area and one-line description
#   --check   only check that every patch (or each NAME) still applies to the
#             checkout, and that its header is complete: one line per stale
#             patch, exit 1 if any (seconds; what CTest runs)
# Bad arguments (an unknown option or mutant name): one line on stderr, exit 2.
#
# Scratch copy: ${STALELEARN_MUTATION_DIR:-<checkout>/../stalelearn-mutation},
# holding src/ (the checkout's tracked and untracked-not-ignored files, those
# that differ copied again at each run) and src/build (configured once, built
# incrementally by deploy/build.sh; the same depth as the checkout's build/,
# so ccache hits). Before the mutants, the selected mutants' targets are built
# and their tests run on the unmutated copy (the baseline): a test that fails
# there would "catch" every mutant, so the run stops. STALELEARN_MUTATION_BASELINE=0
# builds the baseline but skips its tests. Logs: <scratch>/logs/NAME.log.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MUTANTS=$HERE/mutants

die() { echo "run.sh: $*" >&2; exit 2; }
# field FILE KEY: the header line "KEY: value" (before the diff), value only.
field() { sed -n "/^diff --git /q; /^$2:/{s/^$2:[[:space:]]*//p;q;}" "$1"; }

mode=run
names=()
for arg in "$@"; do
  case $arg in
    --list | --check) [ "$mode" = run ] || die "--list and --check do not go together"; mode=${arg#--} ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    -*) die "unknown option '$arg' (options: --list, --check; or mutant names)" ;;
    *) [ -f "$MUTANTS/$arg.patch" ] || die "unknown mutant '$arg' ($0 --list names them)"; names+=("$arg") ;;
  esac
done
if [ ${#names[@]} -eq 0 ]; then
  for f in "$MUTANTS"/*.patch; do [ -e "$f" ] && names+=("$(basename "$f" .patch)"); done
fi
[ ${#names[@]} -gt 0 ] || die "no mutants in $MUTANTS"

if [ "$mode" = list ]; then
  printf '%-33s %-16s %s\n' MUTANT AREA DESCRIPTION
  for n in "${names[@]}"; do
    f=$MUTANTS/$n.patch
    printf '%-33s %-16s %s\n' "$n" "$(field "$f" Area)" "$(field "$f" Description)"
  done
  echo "${#names[@]} mutants"
  exit 0
fi

# The files a patch touches (a/ and b/ paths, /dev/null left out).
patch_files() { sed -n 's|^--- a/||p; s|^+++ b/||p' "$1" | sed 's/\t.*//' | sort -u; }

if [ "$mode" = check ]; then
  start=$SECONDS
  bad=0
  for n in "${names[@]}"; do
    f=$MUTANTS/$n.patch
    for key in Mutant Area Description Build Tests; do
      if [ -z "$(field "$f" "$key")" ]; then echo "malformed: $n: no '$key:' line in the header"; bad=$((bad + 1)); fi
    done
    [ "$(field "$f" Mutant)" = "$n" ] || { echo "malformed: $n: 'Mutant:' does not name the file"; bad=$((bad + 1)); }
    if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      why=$(git -C "$ROOT" apply --check "$f" 2>&1) || { echo "stale: $n: does not apply: $(head -n 1 <<<"$why")"; bad=$((bad + 1)); }
    else
      why=$(patch -p1 --dry-run -s -f -d "$ROOT" <"$f" 2>&1) || { echo "stale: $n: does not apply: $(head -n 1 <<<"$why")"; bad=$((bad + 1)); }
    fi
  done
  if [ "$bad" -gt 0 ]; then
    echo "$bad problem(s) in ${#names[@]} mutants ($((SECONDS - start)) s): fix the patch (README.md, 'Adding a mutant')"
    exit 1
  fi
  echo "all ${#names[@]} mutant patches apply ($((SECONDS - start)) s)"
  exit 0
fi

# ---- a run ----
SCRATCH=${STALELEARN_MUTATION_DIR:-$(dirname "$ROOT")/stalelearn-mutation}
mkdir -p "$SCRATCH"
SCRATCH=$(cd "$SCRATCH" && pwd)
SRC=$SCRATCH/src
BUILD=$SRC/build
LOGS=$SCRATCH/logs
mkdir -p "$SRC" "$LOGS" "$BUILD/.cmake/api/v1/query"
# The CMake file API maps the tests' executables to their targets.
touch "$BUILD/.cmake/api/v1/query/codemodel-v2"
# RelWithDebInfo compiles with -g, for which ccache hashes the working
# directory unless told not to: without this no compile hits across copies.
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_WARN_UNUSED_ENV_VARS=n
run_start=$SECONDS

# Copies the checkout's files whose contents differ from the copy's (fresh
# mtimes: make rebuilds what depends on them, nothing else) and removes files
# the checkout no longer has.
refresh() {
  local f
  git -C "$ROOT" ls-files -co --exclude-standard >"$SCRATCH/files.new"
  if [ -f "$SCRATCH/files" ]; then
    comm -23 <(sort "$SCRATCH/files") <(sort "$SCRATCH/files.new") | while IFS= read -r f; do rm -f "$SRC/$f"; done
  fi
  while IFS= read -r f; do
    [ -f "$ROOT/$f" ] || continue
    if ! cmp -s "$ROOT/$f" "$SRC/$f"; then mkdir -p "$(dirname "$SRC/$f")"; cp "$ROOT/$f" "$SRC/$f"; fi
  done <"$SCRATCH/files.new"
  mv "$SCRATCH/files.new" "$SCRATCH/files"
}
# Puts back the files the last applied patch touched (the list survives an interrupted run).
restore() {
  local f
  [ -f "$SCRATCH/touched" ] || return 0
  while IFS= read -r f; do
    if [ -f "$ROOT/$f" ]; then cp "$ROOT/$f" "$SRC/$f"; else rm -f "$SRC/$f"; fi
  done <"$SCRATCH/touched"
  rm -f "$SCRATCH/touched"
}
trap restore EXIT
# build TARGETS... (log on stdout)
build() { (cd "$SRC" && STALELEARN_BUILD_DIR=build STALELEARN_TARGETS="$*" ./deploy/build.sh); }
# test_targets REGEX: the targets whose files the matching tests run (their
# executables, or programs a script test is given), from the CMake file API.
test_targets() {
  (cd "$BUILD" && ctest -R "$1" --show-only=json-v1) | python3 -c '
import glob, json, os, sys
build = sys.argv[1]
reply = os.path.join(build, ".cmake/api/v1/reply")
indexes = sorted(glob.glob(reply + "/index-*.json"))
if not indexes: sys.exit("no CMake file API reply in " + reply)
model = json.load(open(os.path.join(reply, json.load(open(indexes[-1]))["reply"]["codemodel-v2"]["jsonFile"])))
owner = {}
for t in model["configurations"][0]["targets"]:
    for a in json.load(open(os.path.join(reply, t["jsonFile"]))).get("artifacts", []):
        owner[os.path.normpath(os.path.join(build, a["path"]))] = t["name"]
known = set(owner.values())
text = sys.stdin.read()
names = set()
for t in json.loads(text[text.find("{"):])["tests"]:
    for w in t.get("command", []):
        if os.path.normpath(w) in owner: names.add(owner[os.path.normpath(w)])
        elif w.endswith("_NOT_BUILT") and w[:-10] in known: names.add(w[:-10])  # gtest placeholder
print(" ".join(sorted(names)))' "$BUILD"
}
# build_for TARGETS REGEX LOG: builds the targets, then those of the tests
# (a test binary appears in CTest only once built). Fails if a build fails.
build_for() {
  build $1 >>"$3" 2>&1 || return 1
  [ -d "$BUILD/.cmake/api/v1/reply" ] || cmake "$BUILD" >>"$3" 2>&1 || return 1
  local more
  more=$(test_targets "$2" 2>>"$3") || return 1
  [ -z "$more" ] || build $more >>"$3" 2>&1
}
# run_tests REGEX OUT: ctest; sets ran, skipped, failed and failing (names).
run_tests() {
  (cd "$BUILD" && ctest -R "$1" --timeout 300 -j 2 --output-on-failure) >"$2" 2>&1 || true
  local results
  results=$(grep -E '^ *[0-9]+/[0-9]+ +Test +#[0-9]+: ' "$2" || true)
  ran=$(grep -c . <<<"$results" || true)
  skipped=$(grep -cE '\*\*\*Skipped|\*\*\*Not Run|Disabled' <<<"$results" || true)
  local passed
  passed=$(grep -cE ' Passed +[0-9.]+ sec$' <<<"$results" || true)
  failed=$((ran - skipped - passed))
  failing=$(grep -vE ' Passed +[0-9.]+ sec$|\*\*\*Skipped|\*\*\*Not Run|Disabled' <<<"$results" |
    sed -E 's/^.*Test +#[0-9]+: ([^ ]+).*/\1/' | head -n 3 | paste -sd ' ' - || true)
}

refresh
restore
echo "scratch copy: $SRC (refreshed in $((SECONDS - run_start)) s); logs: $LOGS"

# The baseline: every selected mutant's targets and tests on the unmutated copy.
all_targets="" all_tests=""
for n in "${names[@]}"; do
  all_targets+=" $(field "$MUTANTS/$n.patch" Build)"
  all_tests+="${all_tests:+|}$(field "$MUTANTS/$n.patch" Tests)"  # CMake regexes allow 10 groups: none here
done
base_start=$SECONDS
: >"$LOGS/baseline.log"
# A target added since the copy was last configured is unknown to its
# Makefiles until CMake runs again (make fails before its own check).
if [ -f "$BUILD/CMakeCache.txt" ]; then cmake "$BUILD" >>"$LOGS/baseline.log" 2>&1 || true; fi
if ! build_for "$all_targets" "$all_tests" "$LOGS/baseline.log"; then
  tail -n 20 "$LOGS/baseline.log" >&2
  echo "run.sh: the unmutated copy does not build, or its tests' targets are unknown (log: $LOGS/baseline.log)" >&2
  exit 1
fi
if [ "${STALELEARN_MUTATION_BASELINE:-1}" != 0 ]; then
  run_tests "$all_tests" "$LOGS/baseline.ctest"
  if [ "$ran" -eq "$skipped" ]; then
    echo "run.sh: the baseline ran no test (log: $LOGS/baseline.ctest)" >&2
    exit 1
  elif [ "$failed" -gt 0 ]; then
    echo "run.sh: $failed test(s) fail without any mutant (e.g. $failing; log: $LOGS/baseline.ctest): fix them first" >&2
    exit 1
  fi
  echo "baseline: $ran tests pass unmutated ($skipped skipped) in $((SECONDS - base_start)) s"
else
  echo "baseline: built in $((SECONDS - base_start)) s (tests not run: STALELEARN_MUTATION_BASELINE=0)"
fi

printf '\n%-33s %-16s %-9s %6s  %s\n' MUTANT AREA RESULT SECONDS NOTE
caught=0 survived=0 invalid=0
for n in "${names[@]}"; do
  f=$MUTANTS/$n.patch
  log=$LOGS/$n.log
  start=$SECONDS
  : >"$log"
  restore
  patch_files "$f" >"$SCRATCH/touched"
  result=invalid note=""
  targets=$(field "$f" Build) tests=$(field "$f" Tests)
  if [ -z "$targets" ] || [ -z "$tests" ]; then
    note="header lacks Build: or Tests:"
  elif ! (cd "$SRC" && GIT_CEILING_DIRECTORIES=$SCRATCH git apply "$f") >>"$log" 2>&1; then
    note="does not apply ($0 --check)"
  elif ! build_for "$targets" "$tests" "$log"; then
    note="does not build (log: $log)"
  else
    run_tests "$tests" "$LOGS/$n.ctest"
    cat "$LOGS/$n.ctest" >>"$log"
    if [ "$failed" -gt 0 ]; then
      result=caught note="$failed/$ran failed: $failing"
    elif [ "$ran" -eq 0 ]; then
      note="no test matches '$tests'"
    elif [ "$ran" -eq "$skipped" ]; then
      note="all $ran tests skipped (data not fetched? deploy/fetch-data.sh)"
    else
      result=survived note="$((ran - skipped)) tests passed"
      [ "$skipped" -eq 0 ] || note+=" ($skipped skipped)"
    fi
  fi
  case $result in caught) caught=$((caught + 1)) ;; survived) survived=$((survived + 1)) ;; *) invalid=$((invalid + 1)) ;; esac
  printf '%-33s %-16s %-9s %6d  %s\n' "$n" "$(field "$f" Area)" "$result" $((SECONDS - start)) "$note"
done
restore
total=$((SECONDS - run_start))
printf '\ncaught %d, survived %d, invalid %d of %d mutants; whole run %d s (%d min %d s)\n' \
  "$caught" "$survived" "$invalid" "${#names[@]}" "$total" $((total / 60)) $((total % 60))
[ "$caught" -eq "${#names[@]}" ]
