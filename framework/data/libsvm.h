// LIBSVM / SVMlight sparse text format:
//   <label> <index>:<value> <index>:<value> ...
// one sample per line, tokens separated by spaces or tabs, indices 1-based
// and strictly increasing, labels and values finite numbers ("+1" allowed).
// A malformed line is rejected with InvalidArgument "file:line: reason".
//
// Thread-safety: free functions are reentrant; SparseDataset is plain data
// owned by the caller.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "framework/core/status.h"

namespace stalelearn::data {

// Compressed sparse rows; column indices are 0-based (file index - 1).
struct SparseDataset {
  std::vector<float> labels;                 // one per row
  std::vector<std::uint64_t> row_offsets{0};  // rows() + 1 entries
  std::vector<std::uint32_t> columns;        // nonzeros() entries
  std::vector<float> values;                 // nonzeros() entries
  std::uint32_t num_columns = 0;             // largest index seen

  std::size_t rows() const { return labels.size(); }
  std::size_t nonzeros() const { return values.size(); }
};

Result<SparseDataset> ReadLibsvm(const std::filesystem::path& file);
// Same, from text in memory; `source` names it in error messages.
Result<SparseDataset> ParseLibsvm(std::string_view text, std::string_view source);

}  // namespace stalelearn::data
