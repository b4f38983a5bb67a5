// Writes R's XDR serialization format and lazy-load databases so the R
// reader can be tested on fixtures the tests build themselves (no R, no
// downloaded data). Follows R's serialize.c: symbols enter a reference table
// on first use and are written as REFSXP afterwards.
//
// Thread-safety: an XdrWriter is used by one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stalelearn::data::testing {

class XdrWriter;
// Writes one R object.
using RValue = std::function<void(XdrWriter&)>;
using RAttributes = std::vector<std::pair<std::string, RValue>>;

class XdrWriter {
 public:
  // Writes the header: "X\n", version (2 or 3), R versions, and for version 3
  // the native encoding.
  explicit XdrWriter(int version);

  void Int(std::int32_t value);
  void Double(double value);
  // The flags word: type, object bit, attributes bit, tag bit.
  void Flags(int type, bool has_attributes = false, bool has_tag = false, bool is_object = false);

  void Nil();
  void Char(std::string_view text);
  void Symbol(std::string_view name);  // SYMSXP first time, REFSXP after
  void Attributes(const RAttributes& attributes);  // a tagged pairlist ending in NULL
  void Integers(const std::vector<std::int32_t>& values, const RAttributes& attributes = {});
  void Logicals(const std::vector<std::int32_t>& values);
  void Reals(const std::vector<double>& values, const RAttributes& attributes = {});
  void Strings(const std::vector<std::optional<std::string>>& values, const RAttributes& attributes = {});
  void List(const std::vector<RValue>& elements, const RAttributes& attributes = {});
  // ALTREP compact_intseq first, first+1, ..., first+n-1 (how R stores 1:n).
  void CompactIntSeq(std::int32_t n, std::int32_t first);
  void Factor(const std::vector<std::int32_t>& codes, const std::vector<std::optional<std::string>>& levels);

  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::map<std::string, int, std::less<>> symbols_;  // name -> reference index (1-based)
};

// The test data.frame: columns userId, movieId (int), rating (double), genre
// (factor with an NA), title (character with an NA), timestamp (int, with an
// NA); row.names as
// compact_intseq ALTREP (version 3) or the compact c(NA, -n) form (version 2).
std::vector<std::uint8_t> SerializeFixtureFrame(int version);
// Its TSV export, all columns.
std::string FixtureFrameTsv();

std::vector<std::uint8_t> Zlib(const std::vector<std::uint8_t>& bytes);
std::vector<std::uint8_t> Gzip(const std::vector<std::uint8_t>& bytes);

// Writes <dir>/Rdata.rdx and <dir>/Rdata.rdb holding `objects` (name ->
// serialization), zlib-compressed as R does.
void WriteLazyLoadDb(const std::filesystem::path& dir,
                     const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& objects);

}  // namespace stalelearn::data::testing
