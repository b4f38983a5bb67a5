// Hardware presets of the timing backend: protobuf text files
// <dir>/{memory,link,compute}/<name>.pbtxt (schema and provenance rules in
// framework/proto/timing_presets.proto). A user adds a preset by writing a
// file; lookup is by name.
//
//   auto hmc = LoadMemoryPreset(DefaultPresetDir(), "hmc2");   // Result<proto::MemoryPreset>
//
// Every error is one line naming the file and the field (or file:line:column
// for a text-format error): "…/link/x.pbtxt: field bandwidth_gb_per_s.value:
// must be > 0, got 0".
//
// Thread-safety: free functions without shared state.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "backends/timing/default_preset_dir.h"  // DefaultPresetDir(): the shipped presets
#include "framework/core/status.h"
#include "framework/proto/timing_presets.pb.h"

namespace google::protobuf {
class Message;
}

namespace stalelearn::backends::timing {

enum class PresetKind { kMemory, kLink, kCompute };

// "memory", "link" or "compute": the subdirectory of a preset directory.
std::string_view PresetSubdirectory(PresetKind kind);

// <dir>/<subdir>/<name>.pbtxt. Names are file stems: letters, digits, '-', '_'.
Result<std::filesystem::path> PresetPath(const std::filesystem::path& dir, PresetKind kind,
                                         std::string_view name);

// Names of the presets of `kind` in `dir`, sorted (for "unknown preset" errors).
std::vector<std::string> ListPresets(const std::filesystem::path& dir, PresetKind kind);

// Load, parse and validate. kNotFound names the known presets; kInvalidArgument
// names the file and the field.
Result<proto::MemoryPreset> LoadMemoryPreset(const std::filesystem::path& dir, std::string_view name);
Result<proto::LinkPreset> LoadLinkPreset(const std::filesystem::path& dir, std::string_view name);
Result<proto::ComputePreset> LoadComputePreset(const std::filesystem::path& dir, std::string_view name);

// Parses `text` (protobuf text format; unknown fields are errors) into `out`
// and validates it. `file` names the source in errors; `expected_name`, if not
// empty, must equal the preset's `name` field.
Status ParsePreset(std::string_view text, const std::string& file, std::string_view expected_name,
                   google::protobuf::Message& out);

// Checks every Quantity reachable from `preset`: present, finite, >= 0, > 0
// unless (zero_allowed), whole if (whole_number), tagged and sourced; and that
// a oneof of models is set.
Status ValidatePreset(const google::protobuf::Message& preset, const std::string& file);

}  // namespace stalelearn::backends::timing
