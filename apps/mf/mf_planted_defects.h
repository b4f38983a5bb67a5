// The MF app's planted defects (framework/core/planted_defect.h): bugs in
// its kernel that the self-tests plant to prove the MF quality tests fail.
#pragma once

#include "framework/core/planted_defect.h"

namespace stalelearn::apps::mf {

// The kernel updates the biases but not the latent factors.
inline constexpr PlantedDefect kKernelSkipsFactors = AppDefect(1);
// The kernel trains the user factors, never the item factors.
inline constexpr PlantedDefect kItemFactorsNotTrained = AppDefect(2);

}  // namespace stalelearn::apps::mf
