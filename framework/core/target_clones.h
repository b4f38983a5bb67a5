// STALELEARN_TARGET_CLONES_AVX2: builds a hot loop twice (AVX2 and baseline),
// the CPU picking one at load time through an ifunc resolver.
//
// Under ThreadSanitizer the attribute expands to nothing (baseline only): the
// compiler instruments the generated resolver too (clang 14: a call to
// __tsan_func_entry), and the dynamic loader runs resolvers while it relocates
// the executable, before the TSan runtime is initialised, so every binary
// died with a SEGV before main (deploy/tsan.sh). The clones compute the same
// bits (no FMA), so a TSan build checks the same code paths.
#pragma once

#include "framework/core/sanitizer.h"

#if defined(STALELEARN_TSAN_BUILD)
#define STALELEARN_TARGET_CLONES_AVX2
#else
#define STALELEARN_TARGET_CLONES_AVX2 __attribute__((target_clones("avx2", "default")))
#endif
