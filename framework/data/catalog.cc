#include "framework/data/catalog.h"

#include <fmt/format.h>

#include <array>

#include "framework/data/libsvm.h"
#include "framework/data/ratings.h"

namespace stalelearn::data {
namespace {

constexpr std::array<DatasetEntry, 2> kDatasets = {{
    {"movielens", DatasetFormat::kRatingsTsv, "movielens/ratings.tsv", "ratings", "users", "movies"},
    {"heart_scale", DatasetFormat::kLibsvm, "heart_scale/heart_scale", "samples", "samples", "features"},
}};

}  // namespace

std::span<const DatasetEntry> KnownDatasets() { return kDatasets; }

Result<DatasetEntry> FindDataset(std::string_view name) {
  std::string known;
  for (const DatasetEntry& entry : kDatasets) {
    if (entry.name == name) return entry;
    known += known.empty() ? "" : ", ";
    known += entry.name;
  }
  return NotFound(fmt::format("unknown data set '{}' (known: {})", name, known));
}

std::filesystem::path ResolveDataDir(std::optional<std::string_view> stalelearn_data,
                                     std::optional<std::string_view> home) {
  if (stalelearn_data && !stalelearn_data->empty()) return std::filesystem::path(*stalelearn_data);
  const std::filesystem::path base = home && !home->empty() ? std::filesystem::path(*home) : ".";
  return base / ".cache" / "stalelearn";
}

std::filesystem::path DatasetPath(const DatasetEntry& dataset, const std::filesystem::path& data_dir) {
  return data_dir / dataset.relative_path;
}

Result<DatasetSummary> Summarize(const DatasetEntry& dataset, const std::filesystem::path& path) {
  DatasetSummary summary;
  switch (dataset.format) {
    case DatasetFormat::kRatingsTsv: {
      STALELEARN_ASSIGN_OR_RETURN(RatingsTable table, ReadRatingsTsv(path));
      summary.samples = table.ratings.size();
      summary.rows = table.num_users();
      summary.columns = table.num_items();
      summary.nonzeros = table.ratings.size();
      break;
    }
    case DatasetFormat::kLibsvm: {
      STALELEARN_ASSIGN_OR_RETURN(SparseDataset sparse, ReadLibsvm(path));
      summary.samples = sparse.rows();
      summary.rows = sparse.rows();
      summary.columns = sparse.num_columns;
      summary.nonzeros = sparse.nonzeros();
      break;
    }
  }
  return summary;
}

std::string FormatSummary(const DatasetEntry& dataset, const DatasetSummary& summary) {
  std::string counts = fmt::format("{} {}", summary.samples, dataset.sample_noun);
  if (dataset.row_noun != dataset.sample_noun) counts += fmt::format(", {} {}", summary.rows, dataset.row_noun);
  counts += fmt::format(", {} {}", summary.columns, dataset.column_noun);
  return fmt::format("{}: {} (rows={} columns={} nonzeros={})", dataset.name, counts, summary.rows, summary.columns,
                     summary.nonzeros);
}

}  // namespace stalelearn::data
