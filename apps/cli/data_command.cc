// `stalelearn data ...`: inspect fetched data sets and convert R data.
//   data list                      known data sets, their paths, fetched or not
//   data info NAME [--path FILE]   rows, columns, nonzeros of a fetched data set
//   data convert-rdata --rdb-dir DIR --object NAME [--columns a,b] --out FILE
//                                  export a data.frame of an R lazy-load
//                                  database as TSV (used by deploy/fetch-data.sh)
// The data directory is resolved here, at the program's boundary, from
// --data-dir, else $STALELEARN_DATA, else $HOME/.cache/stalelearn.
#include <fmt/core.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/cli/commands.h"
#include "framework/core/error.h"
#include "framework/data/catalog.h"
#include "framework/data/rdata_frame.h"
#include "framework/data/rdata_lazyload.h"
#include "framework/data/text_lines.h"

namespace stalelearn::cli {
namespace {

std::optional<std::string_view> Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::optional<std::string_view>(value) : std::nullopt;
}

struct DataOptions {
  std::string data_dir;
  std::string name;
  std::string path;  // overrides the catalog path
  std::string rdb_dir;
  std::string db_name = "Rdata";
  std::string object;
  std::vector<std::string> columns;
  std::string out;
};

void RunList(const DataOptions& options) {
  for (const data::DatasetEntry& entry : data::KnownDatasets()) {
    const std::filesystem::path path = data::DatasetPath(entry, options.data_dir);
    std::error_code ec;
    fmt::print("{:<12} {} ({})\n", entry.name, path.string(),
               std::filesystem::exists(path, ec) ? "fetched" : "not fetched");
  }
}

void RunInfo(const DataOptions& options) {
  const data::DatasetEntry entry = ValueOrThrow(data::FindDataset(options.name));
  const std::filesystem::path path =
      options.path.empty() ? data::DatasetPath(entry, options.data_dir) : std::filesystem::path(options.path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw Error(NotFound(fmt::format("{} is not fetched (no {}): run deploy/fetch-data.sh {}", entry.name,
                                     path.string(), entry.name)));
  }
  const data::DatasetSummary summary = ValueOrThrow(data::Summarize(entry, path));
  fmt::print("{}\n", data::FormatSummary(entry, summary));
}

void RunConvertRdata(const DataOptions& options) {
  const data::rdata::LazyLoadDb db =
      ValueOrThrow(data::rdata::LazyLoadDb::Open(std::filesystem::path(options.rdb_dir) / options.db_name));
  const data::rdata::RObjectPtr object = ValueOrThrow(db.Load(options.object));
  std::vector<std::string> columns = options.columns;
  if (columns.empty()) {  // all of them
    Result<data::rdata::DataFrameShape> shape = data::rdata::InspectDataFrame(*object);
    if (shape.ok()) columns = shape->column_names;
  }
  Result<std::string> tsv = data::rdata::DataFrameToTsv(*object, columns);
  if (!tsv.ok()) throw Error(tsv.status().WithContext(fmt::format("object '{}'", options.object)));
  ThrowIfError(data::WriteFileAtomically(options.out, *tsv));
}

}  // namespace

void AddDataCommand(CLI::App& app) {
  auto options = std::make_shared<DataOptions>();
  options->data_dir = data::ResolveDataDir(Env("STALELEARN_DATA"), Env("HOME")).string();

  CLI::App* data = app.add_subcommand("data", "Inspect fetched data sets; convert R data (see deploy/fetch-data.sh)");
  data->require_subcommand(1);
  data->add_option("--data-dir", options->data_dir, "Data directory (default: $STALELEARN_DATA or ~/.cache/stalelearn)")
      ->capture_default_str();

  data->add_subcommand("list", "List known data sets and whether they are fetched")->callback([options] {
    RunList(*options);
  });

  CLI::App* info = data->add_subcommand("info", "Print rows, columns and nonzeros of a fetched data set");
  info->add_option("name", options->name, "Data set name (see `stalelearn data list`)")->required();
  info->add_option("--path", options->path, "Read this file instead of the data set's place in the data directory");
  info->callback([options] { RunInfo(*options); });

  CLI::App* convert = data->add_subcommand(
      "convert-rdata", "Export a data.frame from an R lazy-load database (<dir>/<db>.rdx/.rdb) as TSV");
  convert->add_option("--rdb-dir", options->rdb_dir, "Directory holding the .rdx and .rdb files")->required();
  convert->add_option("--db", options->db_name, "Database name without extension")->capture_default_str();
  convert->add_option("--object", options->object, "Name of the data.frame object")->required();
  convert->add_option("--columns", options->columns, "Columns to export, in order (default: all)")->delimiter(',');
  convert->add_option("--out", options->out, "Output TSV file (written atomically)")->required();
  convert->callback([options] { RunConvertRdata(*options); });
}

}  // namespace stalelearn::cli
