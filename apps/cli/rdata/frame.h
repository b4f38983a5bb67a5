// Export of an R data.frame (read with rdata_lazyload.h) as a TSV file, each
// cell printed as R prints it (write.table style, 15 significant digits):
// doubles in the shorter of fixed and scientific notation (2.5, 3, 1e+05),
// NA as "NA", factors by their level labels, logicals as TRUE/FALSE. The
// header line holds the column names, unquoted; strings are written
// unquoted, so a string with a tab or newline is rejected.
//
// Thread-safety: reentrant. The frame object must outlive the call.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "framework/core/status.h"
#include "apps/cli/rdata/object.h"

namespace stalelearn::data::rdata {

// R's print form of a double with 15 significant digits.
std::string FormatRDouble(double value);

struct DataFrameShape {
  std::vector<std::string> column_names;
  std::size_t rows = 0;
};

// Checks that `frame` is a data.frame (a list with class "data.frame",
// names, row.names and columns of equal length) and returns its shape.
Result<DataFrameShape> InspectDataFrame(const RObject& frame);

// The TSV text of the named columns of `frame`, in the order given. A column
// name that the frame lacks gives NotFound listing the ones it has.
Result<std::string> DataFrameToTsv(const RObject& frame, std::span<const std::string> columns);

}  // namespace stalelearn::data::rdata
