#include "framework/data/catalog.h"

#include <fmt/format.h>

#include "framework/data/libsvm.h"
#include "framework/data/ratings.h"

namespace stalelearn::data {

Status DatasetCatalog::Add(DatasetEntry entry) {
  if (entry.name.empty()) return InvalidArgument("a data set needs a name");
  if (entry.relative_path.empty()) {
    return InvalidArgument(fmt::format("data set '{}' needs a path under the data directory", entry.name));
  }
  for (const DatasetEntry& known : entries_) {
    if (known.name == entry.name) return InvalidArgument(fmt::format("data set '{}' is added twice", entry.name));
  }
  if (!entry.summarize) {
    entry.summarize = [format = entry.format](const std::filesystem::path& file) {
      return SummarizeFormat(format, file);
    };
  }
  if (entry.fetch_command.empty()) entry.fetch_command = "deploy/fetch-data.sh " + entry.name;
  entries_.push_back(std::move(entry));
  return Status::Ok();
}

Result<const DatasetEntry*> DatasetCatalog::Find(std::string_view name) const {
  for (const DatasetEntry& entry : entries_) {
    if (entry.name == name) return &entry;
  }
  return NotFound(fmt::format("unknown data set '{}' (known: {})", name, KnownNames()));
}

std::string DatasetCatalog::KnownNames() const {
  std::string known;
  for (const DatasetEntry& entry : entries_) {
    known += known.empty() ? "" : ", ";
    known += entry.name;
  }
  return known.empty() ? "none" : known;
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

Result<std::filesystem::path> ResolveDatasetFile(const DatasetCatalog& catalog, std::string_view name,
                                                 const std::filesystem::path& data_dir) {
  STALELEARN_ASSIGN_OR_RETURN(const DatasetEntry* entry, catalog.Find(name));
  std::filesystem::path file = DatasetPath(*entry, data_dir);
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return NotFound(
        fmt::format("{} is not fetched (no {}): run {}", entry->name, file.string(), entry->fetch_command));
  }
  return file;
}

Result<DatasetSummary> SummarizeFormat(DatasetFormat format, const std::filesystem::path& file) {
  DatasetSummary summary;
  switch (format) {
    case DatasetFormat::kRatingsTsv: {
      STALELEARN_ASSIGN_OR_RETURN(RatingsTable table, ReadRatingsTsv(file));
      summary.samples = table.ratings.size();
      summary.rows = table.num_users();
      summary.columns = table.num_items();
      summary.nonzeros = table.ratings.size();
      break;
    }
    case DatasetFormat::kLibsvm: {
      STALELEARN_ASSIGN_OR_RETURN(SparseDataset sparse, ReadLibsvm(file));
      summary.samples = sparse.rows();
      summary.rows = sparse.rows();
      summary.columns = sparse.num_columns;
      summary.nonzeros = sparse.nonzeros();
      break;
    }
  }
  return summary;
}

Result<DatasetSummary> Summarize(const DatasetEntry& dataset, const std::filesystem::path& file) {
  if (!dataset.summarize) return SummarizeFormat(dataset.format, file);
  return dataset.summarize(file);
}

std::string FormatSummary(const DatasetEntry& dataset, const DatasetSummary& summary) {
  std::string counts = fmt::format("{} {}", summary.samples, dataset.sample_noun);
  if (dataset.row_noun != dataset.sample_noun) counts += fmt::format(", {} {}", summary.rows, dataset.row_noun);
  counts += fmt::format(", {} {}", summary.columns, dataset.column_noun);
  std::string line = fmt::format("{}: {} (rows={} columns={} nonzeros={})", dataset.name, counts, summary.rows,
                                 summary.columns, summary.nonzeros);
  if (!summary.note.empty()) line += "; " + summary.note;
  return line;
}

}  // namespace stalelearn::data
