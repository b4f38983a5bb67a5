// The data sets a program knows by name. The catalog itself names none: each
// app registers its data sets at start-up (apps/<app>/datasets.h), saying
// where each lives under the data directory (what deploy/fetch-data.sh fills),
// its format, how to summarize a fetched file (rows, columns, nonzeros) and,
// when the fetch script converts raw files with the program, how to prepare it.
//
//   data::DatasetEntry stars;  // in the app's RegisterDatasets
//   stars.name = "stars";
//   stars.relative_path = "stars/ratings.tsv";
//   stars.format = data::DatasetFormat::kRatingsTsv;
//   STALELEARN_RETURN_IF_ERROR(catalog.Add(std::move(stars)));
//   ...
//   STALELEARN_ASSIGN_OR_RETURN(std::filesystem::path file,  // in the app's loader
//                               data::ResolveDatasetFile(catalog, "stars", data_dir));
//
// The data directory is resolved once at the program's boundary (main reads
// the environment and passes the values in), never deep in the code.
//
// Thread-safety: Add() during start-up only; afterwards every const member may
// be called from any thread. Lifetimes: the pointer Find() returns stays valid
// as long as the catalog is not modified or destroyed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"

namespace stalelearn::data {

enum class DatasetFormat { kRatingsTsv, kLibsvm };

struct DatasetSummary {
  std::uint64_t samples = 0;   // ratings or labelled rows
  std::uint64_t rows = 0;      // users, or samples
  std::uint64_t columns = 0;   // items, or features
  std::uint64_t nonzeros = 0;  // stored entries
  std::string note;            // anything else a data set's summarizer adds (e.g. label counts)
};

// Reads a fetched file and counts what it holds.
using DatasetSummarizer = std::function<Result<DatasetSummary>(const std::filesystem::path& file)>;
// Converts raw files fetched into `source` (a directory) into the data set's
// file `out` (written atomically; a preparer may write companions beside it).
using DatasetPreparer = std::function<Status(const std::filesystem::path& source, const std::filesystem::path& out)>;

struct DatasetEntry {
  std::string name;           // what configs and `stalelearn data` call it
  std::string relative_path;  // under the data directory
  DatasetFormat format = DatasetFormat::kLibsvm;
  std::string sample_noun = "samples";   // "ratings", "samples"
  std::string row_noun = "samples";      // "users", "samples"
  std::string column_noun = "features";  // "items", "features"
  // Empty: the generic reader of `format` (SummarizeFormat).
  DatasetSummarizer summarize;
  // Empty: the fetch script needs no conversion by the program.
  DatasetPreparer prepare;
  // The command that fetches it; empty: "deploy/fetch-data.sh <name>".
  std::string fetch_command;
};

class DatasetCatalog {
 public:
  // InvalidArgument if the name is empty or taken, or the path is empty.
  // Fills an empty `summarize` and `fetch_command` with their defaults.
  Status Add(DatasetEntry entry);
  // NotFound naming the known data sets if `name` is not one.
  Result<const DatasetEntry*> Find(std::string_view name) const;
  // In the order they were added.
  const std::vector<DatasetEntry>& entries() const { return entries_; }
  // "a, b, c" in the order they were added.
  std::string KnownNames() const;

 private:
  std::vector<DatasetEntry> entries_;
};

// $STALELEARN_DATA if set and non-empty, else $HOME/.cache/stalelearn, else
// ./.cache/stalelearn. The caller passes the environment values (or nullopt).
std::filesystem::path ResolveDataDir(std::optional<std::string_view> stalelearn_data,
                                     std::optional<std::string_view> home);
std::filesystem::path DatasetPath(const DatasetEntry& dataset, const std::filesystem::path& data_dir);

// The fetched file of data set `name` under `data_dir`: NotFound naming the
// known ones for an unknown name, NotFound "<name> is not fetched (no <file>):
// run <fetch command>" for a missing file.
Result<std::filesystem::path> ResolveDatasetFile(const DatasetCatalog& catalog, std::string_view name,
                                                 const std::filesystem::path& data_dir);

// The generic summary of a file in `format` (ratings TSV, LIBSVM).
Result<DatasetSummary> SummarizeFormat(DatasetFormat format, const std::filesystem::path& file);
// The entry's summarizer applied to `file`.
Result<DatasetSummary> Summarize(const DatasetEntry& dataset, const std::filesystem::path& file);
// "<name>: 3 ratings, 2 users, 2 items (rows=2 columns=2 nonzeros=3)", then
// "; <note>" if the summary has one.
std::string FormatSummary(const DatasetEntry& dataset, const DatasetSummary& summary);

}  // namespace stalelearn::data
