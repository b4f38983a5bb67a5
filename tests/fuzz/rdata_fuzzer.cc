// Fuzzes R's serialization reader (apps/cli/rdata/unserialize.h) and
// the data.frame export behind it (apps/cli/rdata/frame.h), on uncompressed bytes as
// they sit in a lazy-load database entry.
#include <algorithm>

#include "apps/cli/rdata/frame.h"
#include "apps/cli/rdata/unserialize.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stalelearn::data::rdata;
  // The default expansion limit (2^28 elements) is meant for real data sets;
  // a smaller one keeps each input within libFuzzer's memory limit.
  const UnserializeLimits limits{.max_depth = 4096, .max_expanded_elements = 1u << 20};
  stalelearn::Result<RObjectPtr> object = Unserialize(std::span(data, size), limits);
  if (!object.ok()) {
    FUZZ_CHECK(!object.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(*object != nullptr);
  stalelearn::Result<DataFrameShape> shape = InspectDataFrame(**object);
  if (!shape.ok()) return 0;
  stalelearn::Result<std::string> tsv = DataFrameToTsv(**object, shape->column_names);
  if (tsv.ok()) {
    // A header line and one line per row.
    FUZZ_CHECK(static_cast<std::size_t>(std::count(tsv->begin(), tsv->end(), '\n')) == shape->rows + 1);
  }
  return 0;
}
