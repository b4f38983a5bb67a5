// Fuzzes the LIBSVM reader (framework/data/libsvm.h): any text is rejected
// with a Status or gives a well-formed CSR matrix.
#include <cmath>

#include "framework/data/libsvm.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stalelearn;
  Result<data::SparseDataset> parsed = data::ParseLibsvm(fuzz::AsText(data, size), "fuzz");
  if (!parsed.ok()) {
    FUZZ_CHECK(!parsed.status().message().empty());
    return 0;
  }
  const data::SparseDataset& d = *parsed;
  FUZZ_CHECK(d.row_offsets.size() == d.rows() + 1);
  FUZZ_CHECK(d.row_offsets.front() == 0 && d.row_offsets.back() == d.nonzeros());
  FUZZ_CHECK(d.columns.size() == d.values.size());
  for (std::size_t r = 0; r < d.rows(); ++r) {
    FUZZ_CHECK(std::isfinite(d.labels[r]));
    FUZZ_CHECK(d.row_offsets[r] <= d.row_offsets[r + 1]);
    for (std::uint64_t k = d.row_offsets[r]; k < d.row_offsets[r + 1]; ++k) {
      FUZZ_CHECK(d.columns[k] < d.num_columns);
      FUZZ_CHECK(std::isfinite(d.values[k]));
      FUZZ_CHECK(k == d.row_offsets[r] || d.columns[k - 1] < d.columns[k]);
    }
  }
  return 0;
}
