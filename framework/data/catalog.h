// The data sets stalelearn knows by name, where each lives under the data
// directory (what deploy/fetch-data.sh fills), and a summary of a fetched
// one (rows, columns, nonzeros).
//
// The data directory is resolved once at the program's boundary (main reads
// the environment and passes the values in), never deep in the code.
//
// Thread-safety: reentrant; the catalog is a constant table.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "framework/core/status.h"

namespace stalelearn::data {

enum class DatasetFormat { kRatingsTsv, kLibsvm };

struct DatasetEntry {
  std::string_view name;           // "movielens"
  DatasetFormat format;
  std::string_view relative_path;  // under the data directory
  std::string_view sample_noun;    // "ratings", "samples"
  std::string_view row_noun;       // "users", "samples"
  std::string_view column_noun;    // "movies", "features"
};

std::span<const DatasetEntry> KnownDatasets();
// NotFound naming the known data sets if `name` is not one.
Result<DatasetEntry> FindDataset(std::string_view name);

// $STALELEARN_DATA if set and non-empty, else $HOME/.cache/stalelearn, else
// ./.cache/stalelearn. The caller passes the environment values (or nullopt).
std::filesystem::path ResolveDataDir(std::optional<std::string_view> stalelearn_data,
                                     std::optional<std::string_view> home);
std::filesystem::path DatasetPath(const DatasetEntry& dataset, const std::filesystem::path& data_dir);

struct DatasetSummary {
  std::uint64_t samples = 0;   // ratings or labelled rows
  std::uint64_t rows = 0;      // users, or samples
  std::uint64_t columns = 0;   // movies, or features
  std::uint64_t nonzeros = 0;  // stored entries
};

// Reads the file at `path` in the data set's format and summarizes it.
Result<DatasetSummary> Summarize(const DatasetEntry& dataset, const std::filesystem::path& path);
// "movielens: 100004 ratings, 671 users, 9066 movies (rows=671 columns=9066 nonzeros=100004)"
std::string FormatSummary(const DatasetEntry& dataset, const DatasetSummary& summary);

}  // namespace stalelearn::data
