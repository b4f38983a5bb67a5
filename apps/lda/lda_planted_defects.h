// The LDA app's planted defects (framework/core/planted_defect.h): bugs in
// its kernels that the self-tests plant to prove the LDA count checks fail.
#pragma once

#include "framework/core/planted_defect.h"

namespace stalelearn::apps::lda {

// A kernel removes the old topic's count from a slot it never added to (the
// sums stay right; counts go negative).
inline constexpr PlantedDefect kKernelTakesBackWrongCount = AppDefect(11);

}  // namespace stalelearn::apps::lda
