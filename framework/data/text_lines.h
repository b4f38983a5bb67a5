// Line-oriented text parsing shared by the dataset readers (ratings TSV,
// LIBSVM): whole-file reading, iteration over lines with their 1-based
// numbers, whitespace/tab splitting and strict number parsing. Every reader
// reports a malformed line as InvalidArgument "file:line: reason".
//
// Thread-safety: free functions are reentrant; a LineCursor is used by one
// thread. Lifetimes: LineCursor and the string_views it hands out borrow the
// text passed to its constructor, which must outlive them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "framework/core/status.h"

namespace stalelearn::data {

// The whole file as bytes; NotFound if it does not exist, InvalidArgument if
// it is a directory, Unavailable if it cannot be read.
Result<std::string> ReadWholeFile(const std::filesystem::path& file);

// Writes `bytes` to `<file>.tmp.<pid>` and renames it over `file`, so a
// reader never sees a half-written file; the directory must exist.
Status WriteFileAtomically(const std::filesystem::path& file, std::string_view bytes);

// Walks `text` line by line. A trailing "\r" is stripped (CRLF files), and a
// final newline does not produce an extra empty line.
class LineCursor {
 public:
  explicit LineCursor(std::string_view text) : rest_(text) {}

  // Sets `line` to the next line and returns true, or returns false at the end.
  bool Next(std::string_view& line);
  // 1-based number of the line last returned by Next (0 before the first).
  std::size_t line_number() const { return line_number_; }

 private:
  std::string_view rest_;
  std::size_t line_number_ = 0;
};

// InvalidArgument "<source>:<line>: <reason>".
Status LineError(std::string_view source, std::size_t line, std::string_view reason);

// `text` fit to quote in a one-line error: bytes outside printable ASCII as
// \xNN (a NUL would cut the message short, a \r overwrite it), cut after
// `max_bytes` input bytes with "..." appended.
std::string Quotable(std::string_view text, std::size_t max_bytes = 60);

// Strict parsers: the whole token must be a number (a leading '+' is allowed,
// surrounding spaces are not). Doubles must be finite.
std::optional<std::int64_t> ParseInt64(std::string_view token);
std::optional<double> ParseFiniteDouble(std::string_view token);

// Splits off the next token of `rest` separated by any run of spaces or tabs;
// returns an empty view when nothing is left.
std::string_view NextWhitespaceToken(std::string_view& rest);

}  // namespace stalelearn::data
