// Fuzzes the checkpoint manifest reader (framework/runtime/checkpoint_store.h,
// ParseManifest): any bytes are refused with kDataLoss or give a manifest of
// the current format whose file names are plain and distinct.
#include <set>
#include <string>

#include "framework/runtime/checkpoint_store.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stalelearn;
  Result<proto::CheckpointManifest> manifest = runtime::ParseManifest(std::as_bytes(std::span(data, size)));
  if (!manifest.ok()) {
    FUZZ_CHECK(manifest.status().code() == StatusCode::kDataLoss);
    return 0;
  }
  FUZZ_CHECK(manifest->format() == runtime::kCheckpointFormat);
  std::set<std::string> names;
  for (const proto::CheckpointFile& file : manifest->files()) {
    FUZZ_CHECK(!file.name().empty() && file.name().find('/') == std::string::npos);
    FUZZ_CHECK(file.name() != "." && file.name() != ".." && file.name() != runtime::kManifestName);
    FUZZ_CHECK(names.insert(file.name()).second);
  }
  return 0;
}
