#!/usr/bin/env bash
# Fails (exit 1) when a source file includes a header of a layer its own layer
# may not depend on, printing one line per wrong-way include:
#
#   layering: framework/sync/x.h:12: includes "framework/runtime/app.h" (layer runtime), but layer sync may include only sync, core, transport, model, metrics
#
# and when a layer declares a lower layer that none of its files includes (a
# declaration nobody uses links a library for nothing and allows includes no
# one asked for):
#
#   layering: layer sync declares data in LAYERS, but none of its files includes a header of data
#
# Usage: check_layers.sh RULES ROOT. RULES has one line per layer,
# "name|paths|lower layers|owned system headers" (written by
# cmake/StalelearnLayers.cmake); ROOT is the source root the paths are
# relative to. A file belongs to the layer with the longest matching path; a
# quoted include maps to a layer the same way (includes that match no layer,
# such as "x.pb.h" or <vector>, are not checked); a layer may include its own
# headers and those of every layer it reaches through its lower layers. An
# owned system header (<mpi.h>) may be included by its owner only.
set -euo pipefail
if [ $# -ne 2 ] || [ ! -f "$1" ] || [ ! -d "$2" ]; then
  echo "usage: check_layers.sh RULES ROOT (rules file, source root)" >&2
  exit 2
fi
rules=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$2"

paths=()
while IFS= read -r path; do
  if [ ! -e "$path" ]; then
    echo "layering: $rules names '$path', which does not exist under $2" >&2
    exit 2
  fi
  paths+=("$path")
done < <(awk -F'|' '!/^#/ && NF >= 2 { n = split($2, p, " "); for (i = 1; i <= n; i++) print p[i] }' "$rules")

mapfile -t files < <(find "${paths[@]}" -type f \( -name '*.h' -o -name '*.cc' \) | sort -u)

# mawk-compatible awk: no gawk extensions.
awk -v rules_file="$rules" '
function layer_of(path,   best, best_len, p, n) {
  best = ""; best_len = 0
  for (p in path_layer) {
    n = length(p)
    if ((path == p || substr(path, 1, n + 1) == p "/") && n > best_len) { best = path_layer[p]; best_len = n }
  }
  return best
}
# Whether layer `from` may include headers of layer `to` (depth-first over LAYERS).
function reaches(from, to,   n, i, lower) {
  if (from == to) return 1
  if ((from, to) in memo) return memo[from, to]
  memo[from, to] = 0
  n = split(lowers[from], lower, " ")
  for (i = 1; i <= n; i++) if (reaches(lower[i], to)) { memo[from, to] = 1; return 1 }
  return 0
}
function allowed_list(from,   i, out) {
  out = from
  for (i = 1; i <= count; i++) if (order[i] != from && reaches(from, order[i])) out = out ", " order[i]
  return out
}
FNR == NR {
  if ($0 ~ /^#/ || $0 == "") next
  split($0, field, "|")
  lowers[field[1]] = field[3]
  order[++count] = field[1]
  n = split(field[2], p, " "); for (i = 1; i <= n; i++) path_layer[p[i]] = field[1]
  n = split(field[4], h, " "); for (i = 1; i <= n; i++) owner[h[i]] = field[1]
  next
}
FNR == 1 { file_layer = layer_of(FILENAME) }
/^[ \t]*#[ \t]*include[ \t]*[<"]/ {
  line = $0
  sub(/^[ \t]*#[ \t]*include[ \t]*/, "", line)
  quote = substr(line, 1, 1)
  rest = substr(line, 2)
  end = index(rest, quote == "<" ? ">" : "\"")
  if (end == 0) next
  header = substr(rest, 1, end - 1)
  shown = quote == "<" ? "<" header ">" : "\"" header "\""
  for (owned in owner) {
    if ((header == owned || (owned ~ /\/$/ && substr(header, 1, length(owned)) == owned)) && owner[owned] != file_layer) {
      printf "layering: %s:%d: includes %s, which only layer %s may include (rules: %s)\n", FILENAME, FNR, shown, owner[owned], rules_file
      bad++
    }
  }
  if (quote != "\"") next
  target = layer_of(header)
  if (target != "") used[file_layer, target] = 1
  if (target == "" || reaches(file_layer, target)) next
  printf "layering: %s:%d: includes %s (layer %s), but layer %s may include only %s (rules: %s)\n", FILENAME, FNR, shown, target, file_layer, allowed_list(file_layer), rules_file
  bad++
}
END {
  for (i = 1; i <= count; i++) {
    n = split(lowers[order[i]], lower, " ")
    for (j = 1; j <= n; j++) {
      if ((order[i], lower[j]) in used) continue
      printf "layering: layer %s declares %s in LAYERS, but none of its files includes a header of %s (rules: %s)\n", order[i], lower[j], lower[j], rules_file
      bad++
    }
  }
  exit (bad > 0 ? 1 : 0)
}
' "$rules" "${files[@]}" >&2
