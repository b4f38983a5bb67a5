#include "framework/data/ratings.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <thread>
#include <tuple>
#include <vector>
#include <utility>

#include "framework/data/mapped_file.h"
#include "framework/data/text_lines.h"

namespace stalelearn::data {
namespace {

constexpr std::size_t kRequiredColumns = 3;
constexpr std::size_t kMaxColumns = 4;

// The header line: the file's own names of its columns (user, item, rating
// and an optional timestamp, in that order). They name columns in errors.
struct Header {
  std::array<std::string_view, kMaxColumns> names;
  std::size_t count = 0;
};

// Splits a line on tabs; returns the number of fields, which is larger than
// fields.size() (and the rest unset) when the line has too many.
std::size_t SplitTabs(std::string_view line, std::array<std::string_view, 4>& fields) {
  const std::size_t count = 1 + static_cast<std::size_t>(std::count(line.begin(), line.end(), '\t'));
  for (std::size_t i = 0; i < count && i < fields.size(); ++i) {
    std::size_t tab = line.find('\t');
    fields[i] = line.substr(0, tab);
    line.remove_prefix(tab == std::string_view::npos ? line.size() : tab + 1);
  }
  return count;
}

Result<Header> ParseHeader(std::string_view line, std::string_view source) {
  Header header;
  header.count = SplitTabs(line, header.names);
  // Names, not values: a file without a header must not lose its first
  // rating to one.
  bool ok = header.count >= kRequiredColumns && header.count <= kMaxColumns;
  for (std::size_t i = 0; ok && i < header.count; ++i) {
    ok = !header.names[i].empty() && !ParseFiniteDouble(header.names[i]).has_value();
  }
  if (!ok) {
    return LineError(source, 1,
                     fmt::format("expected a header line naming the columns (user, item, rating[, timestamp]: 3 or 4 "
                                 "tab-separated names), got '{}'",
                                 Quotable(line)));
  }
  return header;
}

struct RawRating {
  std::int64_t user_id;
  std::int64_t item_id;
  float value;
  std::int64_t timestamp;
};

// One data line, already split into the header's number of fields. The error
// message is the reason only; the caller adds file:line.
Result<RawRating> ParseRatingFields(const std::array<std::string_view, 4>& fields, const Header& header,
                                    const RatingsReadOptions& options) {
  auto integer = [&](std::size_t column, std::int64_t& out) -> Status {
    std::optional<std::int64_t> value = ParseInt64(fields[column]);
    if (!value) {
      return InvalidArgument(
          fmt::format("{} '{}' is not an integer", Quotable(header.names[column]), Quotable(fields[column])));
    }
    out = *value;
    return Status::Ok();
  };
  RawRating r{};
  STALELEARN_RETURN_IF_ERROR(integer(0, r.user_id));
  STALELEARN_RETURN_IF_ERROR(integer(1, r.item_id));
  std::optional<double> value = ParseFiniteDouble(fields[2]);
  if (!value) {
    return InvalidArgument(
        fmt::format("{} '{}' is not a finite number", Quotable(header.names[2]), Quotable(fields[2])));
  }
  if (*value < options.min_rating || *value > options.max_rating) {
    return InvalidArgument(
        fmt::format("{} {} outside [{}, {}]", Quotable(header.names[2]), fields[2], options.min_rating,
                    options.max_rating));
  }
  r.value = static_cast<float>(*value);
  if (header.count > 3) STALELEARN_RETURN_IF_ERROR(integer(3, r.timestamp));
  return r;
}

// A (user, item) pair rated twice: the error names the later line and the
// first. Sorting rating indices by (user, item, line) costs 4 bytes per rating
// (a hash set of pairs cost ~50 and dominated reading tens of millions).
// Rating i is on line i + 2 (a header, then one rating per line: any other
// line is an error).
Status CheckNoDuplicatePairs(std::span<const RawRating> raw, std::string_view source) {
  std::vector<std::uint32_t> order(raw.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
  auto key = [&](std::uint32_t i) { return std::tuple(raw[i].user_id, raw[i].item_id, i); };
  auto before = [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); };
  // Files sorted by user and item (as fetched and generated) skip the sort.
  if (!std::is_sorted(order.begin(), order.end(), before)) std::sort(order.begin(), order.end(), before);
  for (std::size_t k = 1; k < order.size(); ++k) {
    const RawRating& a = raw[order[k - 1]];
    const RawRating& b = raw[order[k]];
    if (a.user_id == b.user_id && a.item_id == b.item_id) {
      return LineError(source, std::size_t{order[k]} + 2,
                       fmt::format("duplicate rating of item {} by user {} (first at line {})", b.item_id,
                                   b.user_id, std::size_t{order[k - 1]} + 2));
    }
  }
  return Status::Ok();
}

// The distinct ids of one column, ascending, and each id's index among
// them. Ids in [0, 2^31) whose maximum is not far above their count (as in
// fetched and generated sets) are indexed through an array over the id
// range, built in two passes; others are sorted and binary-searched (sorting
// and searching 20 M ids took seconds).
class IdIndex {
 public:
  template <class Id>
  IdIndex(std::span<const RawRating> raw, Id id) {
    std::int64_t low = 0, high = -1;
    for (const RawRating& r : raw) {
      low = std::min(low, id(r));
      high = std::max(high, id(r));
    }
    const auto dense_limit = std::max<std::int64_t>(4 * static_cast<std::int64_t>(raw.size()), 1 << 20);
    if (low >= 0 && high < std::min<std::int64_t>(dense_limit, std::numeric_limits<std::int32_t>::max())) {
      by_id_.assign(static_cast<std::size_t>(high + 1), 0);
      for (const RawRating& r : raw) by_id_[static_cast<std::size_t>(id(r))] = 1;
      for (std::size_t v = 0; v < by_id_.size(); ++v) {
        if (by_id_[v] == 0) continue;
        by_id_[v] = static_cast<std::uint32_t>(sorted_.size());
        sorted_.push_back(static_cast<std::int64_t>(v));
      }
      return;
    }
    sorted_.reserve(raw.size());
    for (const RawRating& r : raw) sorted_.push_back(id(r));
    std::sort(sorted_.begin(), sorted_.end());
    sorted_.erase(std::unique(sorted_.begin(), sorted_.end()), sorted_.end());
    sorted_.shrink_to_fit();
  }
  // Index of an id that was in the column.
  std::uint32_t operator()(std::int64_t id) const {
    if (!by_id_.empty()) return by_id_[static_cast<std::size_t>(id)];
    return static_cast<std::uint32_t>(std::lower_bound(sorted_.begin(), sorted_.end(), id) - sorted_.begin());
  }
  std::vector<std::int64_t> TakeSorted() { return std::move(sorted_); }

 private:
  std::vector<std::int64_t> sorted_;
  std::vector<std::uint32_t> by_id_;  // [id]: its index (dense ids only)
};

// A run of whole data lines: its text, the number of its first line in the
// file, and how many lines LineCursor finds in it.
struct Piece {
  std::string_view text;
  std::size_t first_line = 0;
  std::size_t lines = 0;
};

std::size_t CountLines(std::string_view text) {
  const auto newlines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  return newlines + (!text.empty() && text.back() != '\n' ? 1 : 0);
}

// `body` cut into up to `parts` pieces, each ending after a '\n' (the last
// at the end of the text).
std::vector<Piece> CutIntoPieces(std::string_view body, std::size_t parts) {
  std::vector<Piece> pieces;
  std::size_t begin = 0;
  for (std::size_t p = 1; p <= parts && begin < body.size(); ++p) {
    std::size_t end = p == parts ? body.size() : std::max(begin, body.size() * p / parts);
    if (end < body.size()) {
      const std::size_t newline = body.find('\n', end);
      end = newline == std::string_view::npos ? body.size() : newline + 1;
    }
    if (end > begin) pieces.push_back({body.substr(begin, end - begin)});
    begin = end;
  }
  return pieces;
}

// Parses one piece's lines into out[0, piece.lines). The error names the
// file and line.
Status ParsePiece(const Piece& piece, const Header& header, const RatingsReadOptions& options,
                  std::string_view source, RawRating* out) {
  LineCursor cursor(piece.text);
  std::string_view line;
  std::array<std::string_view, 4> fields;
  std::size_t i = 0;
  while (cursor.Next(line)) {
    const std::size_t n = piece.first_line + i;
    if (line.empty()) return LineError(source, n, "empty line");
    std::size_t count = SplitTabs(line, fields);
    if (fields[0] == header.names[0]) return LineError(source, n, "duplicate header line");
    if (count != header.count) {
      return LineError(source, n, fmt::format("expected {} tab-separated fields, got {}", header.count, count));
    }
    Result<RawRating> parsed = ParseRatingFields(fields, header, options);
    if (!parsed.ok()) return LineError(source, n, parsed.status().message());
    out[i++] = *parsed;
  }
  return Status::Ok();
}

// Runs fn(k) for k in [0, n) on n threads (the calling thread takes k = 0).
template <class Fn>
void OnThreads(std::size_t n, Fn fn) {
  std::vector<std::thread> threads;
  for (std::size_t k = 1; k < n; ++k) threads.emplace_back(fn, k);
  if (n > 0) fn(0);
  for (std::thread& t : threads) t.join();
}

// Pieces a file of `bytes` is parsed in: one per core from 16 MiB on (the
// 20 M-rating synthetic set is 367 MB), at most 8.
std::size_t ParseParts(std::size_t bytes) {
  if (bytes < (std::size_t{16} << 20)) return 1;
  return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
}

}  // namespace

Result<RatingsTable> ParseRatingsTsv(std::string_view text, std::string_view source,
                                     const RatingsReadOptions& options) {
  LineCursor cursor(text);
  std::string_view line;
  if (!cursor.Next(line)) return LineError(source, 1, "empty file: expected a header line");
  STALELEARN_ASSIGN_OR_RETURN(const Header header, ParseHeader(line, source));

  // The data lines, parsed in pieces on all cores: each piece counts its
  // lines, then parses them into its slice of `raw` (one rating per line).
  // The first error by line number wins, as in a serial parse.
  const std::string_view body = text.substr(static_cast<std::size_t>(line.data() + line.size() - text.data()));
  std::string_view rest = body;
  if (!rest.empty() && rest.front() == '\r') rest.remove_prefix(1);
  if (!rest.empty() && rest.front() == '\n') rest.remove_prefix(1);
  const std::size_t parts =
      options.parse_pieces > 0 ? static_cast<std::size_t>(options.parse_pieces) : ParseParts(text.size());
  std::vector<Piece> pieces = CutIntoPieces(rest, parts);
  OnThreads(pieces.size(), [&](std::size_t k) { pieces[k].lines = CountLines(pieces[k].text); });
  std::size_t total = 0;
  for (Piece& piece : pieces) {
    piece.first_line = 2 + total;
    total += piece.lines;
  }
  // Left uninitialised (every element is parsed into below): zero-filling
  // 32 bytes a rating first was a pass over 640 MB for the 20 M-rating set,
  // on one core; its pages are now first touched by the parsing threads.
  const std::unique_ptr<RawRating[]> raw_storage(new RawRating[total]);
  const std::span<RawRating> raw(raw_storage.get(), total);
  std::vector<Status> errors(pieces.size());
  std::size_t offset = 0;
  std::vector<std::size_t> offsets;
  for (const Piece& piece : pieces) {
    offsets.push_back(offset);
    offset += piece.lines;
  }
  OnThreads(pieces.size(), [&](std::size_t k) {
    errors[k] = ParsePiece(pieces[k], header, options, source, raw.data() + offsets[k]);
  });
  for (const Status& error : errors) STALELEARN_RETURN_IF_ERROR(error);
  STALELEARN_RETURN_IF_ERROR(CheckNoDuplicatePairs(raw, source));

  RatingsTable table;
  IdIndex users(raw, [](const RawRating& r) { return r.user_id; });
  IdIndex items(raw, [](const RawRating& r) { return r.item_id; });
  table.ratings.reserve(raw.size());
  for (const RawRating& r : raw) {
    table.ratings.push_back({UserIndex{users(r.user_id)}, ItemIndex{items(r.item_id)}, r.value, r.timestamp});
  }
  table.user_ids = users.TakeSorted();
  table.item_ids = items.TakeSorted();
  return table;
}

Result<RatingsTable> ReadRatingsTsv(const std::filesystem::path& file, const RatingsReadOptions& options) {
  STALELEARN_ASSIGN_OR_RETURN(const MappedFile text, MappedFile::Open(file));
  return ParseRatingsTsv(text.text(), file.string(), options);
}

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, portable, well mixed.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound > 0, without modulo bias.
  std::uint64_t Bounded(std::uint64_t bound) {
    const std::uint64_t limit = -bound % bound;  // 2^64 mod bound
    std::uint64_t r;
    do r = Next();
    while (r < limit);  // [limit, 2^64) holds a whole number of copies of [0, bound)
    return r % bound;
  }

 private:
  std::uint64_t state_;
};

}  // namespace

Result<RatingsSplit> SplitRatings(std::vector<Rating>&& ratings, double test_fraction, std::uint64_t seed) {
  if (!(test_fraction >= 0.0 && test_fraction < 1.0)) {
    return InvalidArgument(fmt::format("test fraction {} outside [0, 1)", test_fraction));
  }
  const std::size_t n = ratings.size();
  const auto k = static_cast<std::size_t>(std::llround(test_fraction * static_cast<double>(n)));
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
  SplitMix64 rng(seed);
  for (std::size_t i = 0; i < k; ++i) std::swap(order[i], order[i + rng.Bounded(n - i)]);

  std::vector<bool> in_test(n, false);
  for (std::size_t i = 0; i < k; ++i) in_test[order[i]] = true;
  order = {};
  RatingsSplit split;
  split.test.reserve(k);
  // The training ratings move down over the held-out ones, in order (a
  // rating is written at or before where it was read).
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (in_test[i]) {
      split.test.push_back(ratings[i]);
    } else {
      ratings[kept++] = ratings[i];
    }
  }
  ratings.resize(kept);
  split.train = std::move(ratings);
  return split;
}

Result<RatingsSplit> SplitRatings(const RatingsTable& table, double test_fraction, std::uint64_t seed) {
  return SplitRatings(std::vector<Rating>(table.ratings), test_fraction, seed);
}

}  // namespace stalelearn::data
