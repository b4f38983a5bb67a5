#include "framework/data/libsvm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "framework/data/mapped_file.h"
#include "framework/data/text_lines.h"

namespace stalelearn::data {
namespace {

// Labels and values are stored as float: a finite double beyond float's range
// (found by fuzzing: "3:4444...4" with 110 digits) would become infinite.
std::optional<float> ParseFiniteFloat(std::string_view token) {
  const std::optional<double> value = ParseFiniteDouble(token);
  if (!value || std::abs(*value) > std::numeric_limits<float>::max()) return std::nullopt;
  return static_cast<float>(*value);
}

}  // namespace

Result<SparseDataset> ParseLibsvm(std::string_view text, std::string_view source) {
  SparseDataset data;
  LineCursor cursor(text);
  std::string_view line;
  while (cursor.Next(line)) {
    const std::size_t n = cursor.line_number();
    std::string_view rest = line;
    std::string_view label_token = NextWhitespaceToken(rest);
    if (label_token.empty()) return LineError(source, n, "empty line: expected '<label> <index>:<value> ...'");
    std::optional<float> label = ParseFiniteFloat(label_token);
    if (!label) {
      return LineError(source, n, fmt::format("label '{}' is not a finite number within float range",
                                              Quotable(label_token)));
    }

    std::uint64_t previous_index = 0;
    for (std::string_view token = NextWhitespaceToken(rest); !token.empty(); token = NextWhitespaceToken(rest)) {
      std::size_t colon = token.find(':');
      if (colon == std::string_view::npos) {
        return LineError(source, n, fmt::format("token '{}' is not <index>:<value>", Quotable(token)));
      }
      std::optional<std::int64_t> index = ParseInt64(token.substr(0, colon));
      if (!index) return LineError(source, n, fmt::format("index in '{}' is not an integer", Quotable(token)));
      if (*index < 1 || *index > std::numeric_limits<std::uint32_t>::max()) {
        return LineError(source, n, fmt::format("index {} outside [1, 2^32 - 1] (indices are 1-based)", *index));
      }
      if (static_cast<std::uint64_t>(*index) <= previous_index) {
        return LineError(source, n, fmt::format("index {} after {}: indices must increase strictly", *index,
                                                previous_index));
      }
      std::optional<float> value = ParseFiniteFloat(token.substr(colon + 1));
      if (!value) {
        return LineError(source, n,
                         fmt::format("value in '{}' is not a finite number within float range", Quotable(token)));
      }
      previous_index = static_cast<std::uint64_t>(*index);
      data.columns.push_back(static_cast<std::uint32_t>(*index - 1));
      data.values.push_back(*value);
    }
    data.num_columns = std::max(data.num_columns, static_cast<std::uint32_t>(previous_index));
    data.labels.push_back(*label);
    data.row_offsets.push_back(data.values.size());
  }
  return data;
}

Result<SparseDataset> ReadLibsvm(const std::filesystem::path& file) {
  STALELEARN_ASSIGN_OR_RETURN(const MappedFile text, MappedFile::Open(file));
  return ParseLibsvm(text.text(), file.string());
}

}  // namespace stalelearn::data
