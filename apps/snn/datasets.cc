#include "apps/snn/datasets.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "apps/snn/idx_reader.h"

namespace stalelearn::apps::snn {
namespace {

// Training images and their labels' counts per class.
Result<data::DatasetSummary> SummarizeImages(const std::filesystem::path& images_file) {
  STALELEARN_ASSIGN_OR_RETURN(LabelledImages set,
                              ReadLabelledImages(images_file, images_file.parent_path() / "train-labels-idx1-ubyte", 10));
  data::DatasetSummary summary;
  summary.samples = static_cast<std::uint64_t>(set.images.count);
  summary.rows = summary.samples;
  summary.columns = static_cast<std::uint64_t>(set.images.pixels_per_image());
  summary.nonzeros = static_cast<std::uint64_t>(
      std::count_if(set.images.pixels.begin(), set.images.pixels.end(), [](std::uint8_t p) { return p != 0; }));
  std::array<int, 10> per_class{};
  for (std::uint8_t y : set.labels) ++per_class[y];
  summary.note = fmt::format("{}x{} images; training labels per class {}", set.images.rows, set.images.columns,
                             fmt::join(per_class, " "));
  return summary;
}

data::DatasetEntry ImageSet(std::string name) {
  data::DatasetEntry entry;
  entry.relative_path = name + "/train-images-idx3-ubyte";
  entry.name = std::move(name);
  entry.sample_noun = "images";
  entry.row_noun = "images";
  entry.column_noun = "pixels";
  entry.summarize = SummarizeImages;
  return entry;
}

}  // namespace

Status RegisterDatasets(data::DatasetCatalog& catalog) {
  STALELEARN_RETURN_IF_ERROR(catalog.Add(ImageSet("mnist")));
  return catalog.Add(ImageSet("fashion-mnist"));
}

}  // namespace stalelearn::apps::snn
