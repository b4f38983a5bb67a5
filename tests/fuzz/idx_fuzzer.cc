// Fuzzes the snn app's IDX reader (apps/snn/idx_reader.h) on both kinds of
// file it reads, images (3 dimensions) and labels (1). The reader takes paths,
// so each input is written to a per-process scratch file first.
//
// Properties: a rejection is a non-empty one-line message; accepted images
// have sizes inside the reader's limits and exactly count x rows x columns
// pixels (image(i) never reads past them); accepted labels are the bytes
// after an 8-byte header.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "apps/snn/idx_reader.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

const std::filesystem::path& ScratchFile() {
  static const std::filesystem::path file = [] {
    auto dir = std::filesystem::temp_directory_path() / ("stalelearn-fuzz-idx." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir / "input.idx";
  }();
  return file;
}

template <class T>
bool RejectedInOneLine(const stalelearn::Result<T>& result) {
  if (result.ok()) return false;
  FUZZ_CHECK(!result.status().message().empty());
  FUZZ_CHECK(result.status().message().find('\n') == std::string::npos);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stalelearn;
  {
    std::ofstream out(ScratchFile(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  Result<apps::snn::IdxImages> images = apps::snn::ReadIdxImages(ScratchFile());
  if (!RejectedInOneLine(images)) {
    FUZZ_CHECK(images->rows > 0 && images->rows <= 4096 && images->columns > 0 && images->columns <= 4096);
    FUZZ_CHECK(images->count >= 0);
    FUZZ_CHECK(images->pixels.size() == static_cast<std::size_t>(images->count) *
                                            static_cast<std::size_t>(images->pixels_per_image()));
  }
  Result<std::vector<std::uint8_t>> labels = apps::snn::ReadIdxLabels(ScratchFile());
  if (!RejectedInOneLine(labels)) FUZZ_CHECK(labels->size() + 8 == size);
  return 0;
}
