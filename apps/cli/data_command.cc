// `stalelearn data ...`: inspect fetched data sets and convert R data.
//   data list                      known data sets, their paths, fetched or not
//   data info NAME [--path FILE]   rows, columns, nonzeros of a fetched data set
//   data prepare NAME --source DIR [--out FILE]
//                                  convert raw files fetched into DIR into the
//                                  data set's file (used by deploy/fetch-data.sh)
//   data convert-rdata --rdb-dir DIR --object NAME [--columns a,b] --out FILE
//                                  export a data.frame of an R lazy-load
//                                  database as TSV (used by deploy/fetch-data.sh)
//   data synth ratings --users U --items I --ratings N [--rank K --zipf A
//                      --noise S --seed X] --out DIR
//                                  DIR/ratings.tsv from a planted low-rank
//                                  model (framework/data/synth_ratings.h) and
//                                  DIR/synth.txt; prints the noise floor
// The data directory is resolved here, at the program's boundary, from
// --data-dir, else $STALELEARN_DATA, else $HOME/.cache/stalelearn. The data
// sets are those the built-in apps register (builtin_datasets.h); this file
// names none of them.
#include <fmt/core.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/cli/commands.h"
#include "apps/cli/rdata/frame.h"
#include "apps/cli/rdata/lazyload.h"
#include "framework/core/error.h"
#include "framework/data/catalog.h"
#include "framework/data/synth_ratings.h"
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
  std::string source;
  std::string rdb_dir;
  std::string db_name = "Rdata";
  std::string object;
  std::vector<std::string> columns;
  std::string out;
  data::SynthRatingsSpec synth;
};

void RunList(const DataOptions& options, const data::DatasetCatalog& catalog) {
  for (const data::DatasetEntry& entry : catalog.entries()) {
    const std::filesystem::path path = data::DatasetPath(entry, options.data_dir);
    std::error_code ec;
    fmt::print("{:<12} {} ({})\n", entry.name, path.string(),
               std::filesystem::exists(path, ec) ? "fetched" : "not fetched");
  }
}

void RunInfo(const DataOptions& options, const data::DatasetCatalog& catalog) {
  const data::DatasetEntry& entry = *ValueOrThrow(catalog.Find(options.name));
  const std::filesystem::path path = options.path.empty()
                                         ? ValueOrThrow(data::ResolveDatasetFile(catalog, options.name, options.data_dir))
                                         : std::filesystem::path(options.path);
  const data::DatasetSummary summary = ValueOrThrow(data::Summarize(entry, path));
  fmt::print("{}\n", data::FormatSummary(entry, summary));
}

void RunPrepare(const DataOptions& options, const data::DatasetCatalog& catalog) {
  const data::DatasetEntry& entry = *ValueOrThrow(catalog.Find(options.name));
  if (!entry.prepare) {
    throw Error(InvalidArgument(fmt::format("data set '{}' has nothing to prepare: run {}", entry.name,
                                            entry.fetch_command)));
  }
  const std::filesystem::path out =
      options.out.empty() ? data::DatasetPath(entry, options.data_dir) : std::filesystem::path(options.out);
  std::error_code ec;
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path(), ec);
  const Status status = entry.prepare(options.source, out);
  if (!status.ok()) throw Error(status.WithContext(fmt::format("preparing {}", entry.name)));
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

void RunSynthRatings(const DataOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::filesystem::path dir(options.out);
  const data::SynthRatingsResult result = ValueOrThrow(data::WriteSynthRatings(options.synth, dir / "ratings.tsv"));
  ThrowIfError(data::WriteFileAtomically(dir / "synth.txt", data::DescribeSynthRatings(options.synth, result)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}: {} ratings, {} users, {} items rated, {:.1f} MB in {:.1f} s\n", (dir / "ratings.tsv").string(),
             result.ratings, result.users, result.items_rated, static_cast<double>(result.bytes) / 1e6, seconds);
  fmt::print("noise floor (RMSE of the planted model): {:.4f}; clipped to [0.5, 5]: {:.3f}%\n", result.noise_floor,
             100 * result.clipped_fraction);
  fmt::print("oracle bound (no learner expects a lower test RMSE: items estimated from their other ratings, users "
             "known): {:.4f}\n",
             result.oracle_bound);
}

}  // namespace

void AddDataCommand(CLI::App& app, const data::DatasetCatalog& catalog) {
  auto options = std::make_shared<DataOptions>();
  options->data_dir = data::ResolveDataDir(Env("STALELEARN_DATA"), Env("HOME")).string();

  CLI::App* data = app.add_subcommand("data", "Inspect fetched data sets; convert R data (see deploy/fetch-data.sh)");
  data->require_subcommand(1);
  data->add_option("--data-dir", options->data_dir, "Data directory (default: $STALELEARN_DATA or ~/.cache/stalelearn)")
      ->capture_default_str();

  data->add_subcommand("list", "List known data sets and whether they are fetched")->callback([options, &catalog] {
    RunList(*options, catalog);
  });

  CLI::App* info = data->add_subcommand("info", "Print rows, columns and nonzeros of a fetched data set");
  info->add_option("name", options->name, "Data set name (see `stalelearn data list`)")->required();
  info->add_option("--path", options->path, "Read this file instead of the data set's place in the data directory");
  info->callback([options, &catalog] { RunInfo(*options, catalog); });

  CLI::App* prepare = data->add_subcommand("prepare", "Convert a data set's raw files (fetched by deploy/fetch-data.sh)");
  prepare->add_option("name", options->name, "Data set name (see `stalelearn data list`)")->required();
  prepare->add_option("--source", options->source, "Directory holding the raw files")->required();
  prepare->add_option("--out", options->out, "Output file, written atomically (default: the data set's place)");
  prepare->callback([options, &catalog] { RunPrepare(*options, catalog); });

  CLI::App* convert = data->add_subcommand(
      "convert-rdata", "Export a data.frame from an R lazy-load database (<dir>/<db>.rdx/.rdb) as TSV");
  convert->add_option("--rdb-dir", options->rdb_dir, "Directory holding the .rdx and .rdb files")->required();
  convert->add_option("--db", options->db_name, "Database name without extension")->capture_default_str();
  convert->add_option("--object", options->object, "Name of the data.frame object")->required();
  convert->add_option("--columns", options->columns, "Columns to export, in order (default: all)")->delimiter(',');
  convert->add_option("--out", options->out, "Output TSV file (written atomically)")->required();
  convert->callback([options] { RunConvertRdata(*options); });

  CLI::App* synth = data->add_subcommand("synth", "Generate synthetic data at any scale");
  synth->require_subcommand(1);
  CLI::App* ratings = synth->add_subcommand(
      "ratings", "Ratings TSV from a planted low-rank model with Zipf item popularity and Gaussian noise");
  data::SynthRatingsSpec& spec = options->synth;
  ratings->add_option("--users", spec.users, "Users (ids 1..U)")->required();
  ratings->add_option("--items", spec.items, "Items (ids 1..I)")->required();
  ratings->add_option("--ratings", spec.ratings, "Ratings, spread evenly over the users")->required();
  ratings->add_option("--rank", spec.rank, "Rank of the planted model")->capture_default_str();
  ratings->add_option("--zipf", spec.zipf, "Item popularity exponent (0: uniform)")->capture_default_str();
  ratings->add_option("--noise", spec.noise, "Standard deviation of the Gaussian noise")->capture_default_str();
  ratings->add_option("--seed", spec.seed, "Random seed: the same seed writes the same bytes")->capture_default_str();
  ratings->add_option("--out", options->out, "Output directory (ratings.tsv, synth.txt)")->required();
  ratings->callback([options] { RunSynthRatings(*options); });
}

}  // namespace stalelearn::cli
