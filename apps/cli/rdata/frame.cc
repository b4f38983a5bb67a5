#include "apps/cli/rdata/frame.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace stalelearn::data::rdata {

std::string FormatRDouble(double value) {
  if (IsNaReal(value)) return "NA";
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Inf" : "-Inf";
  if (value == 0) return "0";
  // 15 significant digits, trailing zeros dropped: the digits R would show.
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.14e", value);
  std::string_view text(buffer);
  const std::size_t e_pos = text.find('e');
  const int exponent = std::atoi(buffer + e_pos + 1);
  std::string_view mantissa = text.substr(0, e_pos);
  while (mantissa.back() == '0') mantissa.remove_suffix(1);
  if (mantissa.back() == '.') mantissa.remove_suffix(1);
  const int sign = value < 0 ? 1 : 0;
  const int significant = static_cast<int>(std::count_if(mantissa.begin(), mantissa.end(),
                                                         [](char c) { return c >= '0' && c <= '9'; }));
  // R picks fixed notation unless it is wider than scientific (scipen 0).
  const int decimals = std::max(0, significant - 1 - exponent);
  const int fixed_width = sign + (exponent >= 0 ? exponent + 1 : 1) + (decimals > 0 ? decimals + 1 : 0);
  const int sci_width = sign + (significant > 1 ? significant + 1 : 1) + (std::abs(exponent) >= 100 ? 5 : 4);
  if (fixed_width <= sci_width) std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  else std::snprintf(buffer, sizeof buffer, "%.*e", significant - 1, value);
  return buffer;
}

namespace {

// Number of rows from row.names: compact c(NA, -n) / c(NA, n), or one name per row.
Result<std::size_t> RowCount(const RObject& row_names) {
  if (row_names.type == SexpType::kInteger && row_names.integers.size() == 2 &&
      row_names.integers[0] == kNaInteger) {
    return static_cast<std::size_t>(std::abs(static_cast<std::int64_t>(row_names.integers[1])));
  }
  switch (row_names.type) {
    case SexpType::kInteger:
    case SexpType::kReal:
    case SexpType::kString: return row_names.length();
    default: return DataLoss("data.frame row.names is neither compact nor a vector");
  }
}

// Appends one cell of a column to the output; validated once per column.
class ColumnPrinter {
 public:
  static Result<ColumnPrinter> For(const RObject& column, const std::string& name) {
    ColumnPrinter printer(column);
    if (column.Inherits("factor")) {
      const RObject* levels = column.Attribute("levels");
      if (column.type != SexpType::kInteger || levels == nullptr || levels->type != SexpType::kString) {
        return DataLoss(fmt::format("column '{}': a factor without integer codes and string levels", name));
      }
      for (std::int32_t code : column.integers) {
        if (code != kNaInteger && (code < 1 || static_cast<std::size_t>(code) > levels->strings.size())) {
          return DataLoss(fmt::format("column '{}': factor code {} outside 1..{}", name, code, levels->strings.size()));
        }
      }
      printer.levels_ = levels;
      STALELEARN_RETURN_IF_ERROR(CheckStrings(*levels, name));
    } else if (column.type == SexpType::kString) {
      STALELEARN_RETURN_IF_ERROR(CheckStrings(column, name));
    } else if (column.type != SexpType::kInteger && column.type != SexpType::kReal &&
               column.type != SexpType::kLogical) {
      return InvalidArgument(fmt::format("column '{}' has type {}, which a TSV cannot hold", name,
                                         SexpTypeName(column.type)));
    }
    return printer;
  }

  void Append(std::size_t row, std::string& out) const {
    const RObject& c = column_;
    switch (c.type) {
      case SexpType::kReal: out += FormatRDouble(c.reals[row]); return;
      case SexpType::kLogical:
        out += c.integers[row] == kNaInteger ? "NA" : c.integers[row] ? "TRUE" : "FALSE";
        return;
      case SexpType::kString: out += c.strings[row].value_or("NA"); return;
      default: break;
    }
    const std::int32_t value = c.integers[row];
    if (value == kNaInteger) out += "NA";
    else if (levels_ != nullptr) out += levels_->strings[static_cast<std::size_t>(value) - 1].value_or("NA");
    else fmt::format_to(std::back_inserter(out), "{}", value);
  }

 private:
  explicit ColumnPrinter(const RObject& column) : column_(column) {}

  static Status CheckStrings(const RObject& strings, const std::string& name) {
    for (const auto& s : strings.strings) {
      if (s && s->find_first_of("\t\n\r") != std::string::npos) {
        return InvalidArgument(fmt::format("column '{}' holds a string with a tab or newline", name));
      }
    }
    return Status::Ok();
  }

  const RObject& column_;
  const RObject* levels_ = nullptr;
};

}  // namespace

Result<DataFrameShape> InspectDataFrame(const RObject& frame) {
  if (frame.type != SexpType::kList || !frame.Inherits("data.frame")) {
    return InvalidArgument(fmt::format("object is a {}, not a data.frame", SexpTypeName(frame.type)));
  }
  const RObject* names = frame.Attribute("names");
  const RObject* row_names = frame.Attribute("row.names");
  if (names == nullptr || names->type != SexpType::kString || names->strings.size() != frame.elements.size()) {
    return DataLoss("data.frame without one name per column");
  }
  if (row_names == nullptr) return DataLoss("data.frame without row.names");
  DataFrameShape shape;
  STALELEARN_ASSIGN_OR_RETURN(shape.rows, RowCount(*row_names));
  for (std::size_t i = 0; i < frame.elements.size(); ++i) {
    shape.column_names.push_back(names->strings[i].value_or("NA"));
    if (frame.elements[i]->length() != shape.rows) {
      return DataLoss(fmt::format("data.frame column '{}' has {} rows, row.names say {}", shape.column_names.back(),
                                  frame.elements[i]->length(), shape.rows));
    }
  }
  return shape;
}

Result<std::string> DataFrameToTsv(const RObject& frame, std::span<const std::string> columns) {
  STALELEARN_ASSIGN_OR_RETURN(DataFrameShape shape, InspectDataFrame(frame));
  if (columns.empty()) return InvalidArgument("no columns to export");
  std::vector<ColumnPrinter> printers;
  for (const std::string& name : columns) {
    auto it = std::find(shape.column_names.begin(), shape.column_names.end(), name);
    if (it == shape.column_names.end()) {
      return NotFound(fmt::format("data.frame has no column '{}' (it has: {})", name,
                                  fmt::join(shape.column_names, ", ")));
    }
    // A tab or line break inside a name or cell would silently shift TSV
    // columns or rows (found by fuzzing): refuse it.
    if (name.find_first_of("\t\n\r") != std::string::npos) {
      return InvalidArgument(fmt::format("data.frame column name '{}' holds a tab or line break", name));
    }
    STALELEARN_ASSIGN_OR_RETURN(ColumnPrinter printer,
                                ColumnPrinter::For(*frame.elements[it - shape.column_names.begin()], name));
    printers.push_back(printer);
  }
  std::string out = fmt::format("{}\n", fmt::join(columns, "\t"));
  out.reserve(shape.rows * columns.size() * 8);
  for (std::size_t row = 0; row < shape.rows; ++row) {
    for (std::size_t c = 0; c < printers.size(); ++c) {
      if (c > 0) out += '\t';
      const std::size_t cell_start = out.size();
      printers[c].Append(row, out);
      if (out.find_first_of("\t\n\r", cell_start) != std::string::npos) {
        return InvalidArgument(
            fmt::format("data.frame column '{}' row {} holds a tab or line break", columns[c], row + 1));
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace stalelearn::data::rdata
