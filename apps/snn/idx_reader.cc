#include "apps/snn/idx_reader.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>

namespace stalelearn::apps::snn {
namespace {

constexpr std::uint8_t kUnsignedByte = 0x08;

struct IdxFile {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;
};

std::uint32_t BigEndian32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// Reads the whole file and checks the header against `expected_dims` and the size.
Result<IdxFile> ReadIdx(const std::filesystem::path& file, std::size_t expected_dims) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return NotFound(fmt::format("{}: cannot open the IDX file", file.string()));
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 4) return DataLoss(fmt::format("{}: {} bytes, too short for an IDX header", file.string(), bytes.size()));
  if (bytes[0] != 0 || bytes[1] != 0 || bytes[2] != kUnsignedByte || bytes[3] != expected_dims) {
    return DataLoss(fmt::format("{}: magic {:02x}{:02x}{:02x}{:02x}, expected 0008{:02x} (unsigned bytes, {} dimensions)",
                                file.string(), bytes[0], bytes[1], bytes[2], bytes[3], expected_dims, expected_dims));
  }
  const std::size_t header = 4 + 4 * expected_dims;
  if (bytes.size() < header) {
    return DataLoss(fmt::format("{}: {} bytes, shorter than its {}-byte header", file.string(), bytes.size(), header));
  }
  IdxFile idx;
  std::uint64_t payload = 1;
  for (std::size_t d = 0; d < expected_dims; ++d) {
    idx.dims.push_back(BigEndian32(bytes.data() + 4 + 4 * d));
    payload *= idx.dims.back();
  }
  if (bytes.size() - header != payload) {
    return DataLoss(fmt::format("{}: header promises {} data bytes, the file holds {} ({})", file.string(), payload,
                                bytes.size() - header, bytes.size() - header < payload ? "truncated" : "trailing bytes"));
  }
  idx.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return idx;
}

}  // namespace

Result<IdxImages> ReadIdxImages(const std::filesystem::path& file) {
  STALELEARN_ASSIGN_OR_RETURN(IdxFile idx, ReadIdx(file, 3));
  if (idx.dims[1] == 0 || idx.dims[2] == 0 || idx.dims[1] > 4096 || idx.dims[2] > 4096) {
    return DataLoss(fmt::format("{}: image size {}x{} out of range", file.string(), idx.dims[1], idx.dims[2]));
  }
  IdxImages images;
  images.count = idx.dims[0];
  images.rows = static_cast<int>(idx.dims[1]);
  images.columns = static_cast<int>(idx.dims[2]);
  images.pixels = std::move(idx.data);
  return images;
}

Result<std::vector<std::uint8_t>> ReadIdxLabels(const std::filesystem::path& file) {
  STALELEARN_ASSIGN_OR_RETURN(IdxFile idx, ReadIdx(file, 1));
  return std::move(idx.data);
}

Result<LabelledImages> ReadLabelledImages(const std::filesystem::path& images_file,
                                          const std::filesystem::path& labels_file, int classes) {
  LabelledImages set;
  STALELEARN_ASSIGN_OR_RETURN(set.images, ReadIdxImages(images_file));
  STALELEARN_ASSIGN_OR_RETURN(set.labels, ReadIdxLabels(labels_file));
  if (static_cast<std::int64_t>(set.labels.size()) != set.images.count) {
    return InvalidArgument(fmt::format("{} holds {} images but {} holds {} labels", images_file.string(),
                                       set.images.count, labels_file.string(), set.labels.size()));
  }
  for (std::size_t i = 0; i < set.labels.size(); ++i) {
    if (set.labels[i] >= classes) {
      return DataLoss(fmt::format("{}: label {} of item {} is not below {}", labels_file.string(), set.labels[i], i, classes));
    }
  }
  return set;
}

}  // namespace stalelearn::apps::snn
