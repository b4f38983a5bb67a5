// Where the timing backend looks for presets when backend.timing.preset_dir is
// empty. Its definition (default_preset_dir.cc) is compiled apart from the
// backend so that the path can differ between the build tree (the source
// tree's backends/timing/presets) and programs built against an installed
// package (<prefix>/share/stalelearn/timing/presets; stalelearnConfig.cmake).
// Thread-safety: a pure function.
#pragma once

#include <filesystem>

namespace stalelearn::backends::timing {

std::filesystem::path DefaultPresetDir();

}  // namespace stalelearn::backends::timing
