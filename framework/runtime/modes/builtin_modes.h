// The built-in consistency modes, one file each; registered by
// RegisterBuiltinModes (consistency_mode.h).
#pragma once

#include "framework/runtime/consistency_mode.h"

namespace stalelearn::runtime::modes {

ModeDefinition SspMode();        // bounded staleness s (consistency.staleness)
ModeDefinition EsspMode();       // bounded staleness s, replica refreshed before every clock
ModeDefinition BspMode();        // s = 0
ModeDefinition AspMode();        // no bound
ModeDefinition DirectMode();     // no replica: rows fetched and merged per clock
ModeDefinition AllreduceMode();  // no memory ranks: deltas summed over ranks per clock

}  // namespace stalelearn::runtime::modes
