// Reader of the IDX files MNIST and Fashion-MNIST come in (LeCun's format:
// a big-endian header, magic 0x00000800 | type << 8 | dimensions, then the
// dimension sizes as big-endian uint32, then the unsigned bytes row-major).
// Only unsigned-byte data (type 0x08) is accepted: images with 3 dimensions,
// labels with 1.
//
// Errors (one line naming the file): NotFound for a missing file, DataLoss for
// a bad magic number, a wrong dimension count or a size that does not match
// the header (truncated or padded files), InvalidArgument when images and
// labels disagree in count.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "framework/core/status.h"

namespace stalelearn::apps::snn {

struct IdxImages {
  std::int64_t count = 0;
  int rows = 0;
  int columns = 0;
  std::vector<std::uint8_t> pixels;  // count x rows x columns

  int pixels_per_image() const { return rows * columns; }
  const std::uint8_t* image(std::int64_t i) const {
    return pixels.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(pixels_per_image());
  }
};

Result<IdxImages> ReadIdxImages(const std::filesystem::path& file);
Result<std::vector<std::uint8_t>> ReadIdxLabels(const std::filesystem::path& file);

// A labelled image set: the images file and its labels file, checked to hold
// the same number of items and labels below `classes`.
struct LabelledImages {
  IdxImages images;
  std::vector<std::uint8_t> labels;
};
Result<LabelledImages> ReadLabelledImages(const std::filesystem::path& images_file,
                                          const std::filesystem::path& labels_file, int classes);

}  // namespace stalelearn::apps::snn
