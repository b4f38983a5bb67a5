// STALELEARN_TIMING_PRESET_DIR is set where this file is compiled
// (backends/timing/CMakeLists.txt, and the installed stalelearnConfig.cmake).
#include "backends/timing/default_preset_dir.h"

namespace stalelearn::backends::timing {

std::filesystem::path DefaultPresetDir() { return STALELEARN_TIMING_PRESET_DIR; }

}  // namespace stalelearn::backends::timing
