#include "tests/unit/data/rdata_fixture.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <fstream>
#include <stdexcept>

namespace stalelearn::data::testing {
namespace {

constexpr int kSymbolSxp = 1, kListSxp = 2, kCharSxp = 9, kLogicalSxp = 10, kIntSxp = 13, kRealSxp = 14,
              kStrSxp = 16, kVecSxp = 19, kAltrepSxp = 238, kNilValueSxp = 254, kRefSxp = 255;
constexpr std::int32_t kNa = INT32_MIN;

void WriteFile(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::uint8_t> Deflate(const std::vector<std::uint8_t>& bytes, int window_bits) {
  z_stream stream{};
  if (deflateInit2(&stream, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::vector<std::uint8_t> out(deflateBound(&stream, bytes.size()) + 32);
  stream.next_in = const_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

}  // namespace

XdrWriter::XdrWriter(int version) {
  bytes_ = {'X', '\n'};
  Int(version);
  Int(0x040201);  // written by R 4.2.1
  Int(version == 3 ? 0x030500 : 0x020300);
  if (version == 3) {
    Int(5);
    for (char c : std::string_view("UTF-8")) bytes_.push_back(static_cast<std::uint8_t>(c));
  }
}

void XdrWriter::Int(std::int32_t value) {
  const auto bits = static_cast<std::uint32_t>(value);
  for (int shift = 24; shift >= 0; shift -= 8) bytes_.push_back(static_cast<std::uint8_t>(bits >> shift));
}

void XdrWriter::Double(double value) {
  const auto bits = std::bit_cast<std::uint64_t>(value);
  for (int shift = 56; shift >= 0; shift -= 8) bytes_.push_back(static_cast<std::uint8_t>(bits >> shift));
}

void XdrWriter::Flags(int type, bool has_attributes, bool has_tag, bool is_object) {
  Int(type | (is_object ? 1 << 8 : 0) | (has_attributes ? 1 << 9 : 0) | (has_tag ? 1 << 10 : 0));
}

void XdrWriter::Nil() { Flags(kNilValueSxp); }

void XdrWriter::Char(std::string_view text) {
  Int(kCharSxp | (8 << 12));  // "levels" field: UTF-8 encoded, as R marks it
  Int(static_cast<std::int32_t>(text.size()));
  for (char c : text) bytes_.push_back(static_cast<std::uint8_t>(c));
}

void XdrWriter::Symbol(std::string_view name) {
  if (auto it = symbols_.find(name); it != symbols_.end()) {
    Int(kRefSxp | (it->second << 8));  // packed reference index
    return;
  }
  Flags(kSymbolSxp);
  Char(name);
  symbols_.emplace(std::string(name), static_cast<int>(symbols_.size()) + 1);
}

void XdrWriter::Attributes(const RAttributes& attributes) {
  for (const auto& [name, value] : attributes) {
    Flags(kListSxp, false, true);
    Symbol(name);
    value(*this);
  }
  Nil();
}

void XdrWriter::Integers(const std::vector<std::int32_t>& values, const RAttributes& attributes) {
  Flags(kIntSxp, !attributes.empty());
  Int(static_cast<std::int32_t>(values.size()));
  for (std::int32_t v : values) Int(v);
  if (!attributes.empty()) Attributes(attributes);
}

void XdrWriter::Logicals(const std::vector<std::int32_t>& values) {
  Flags(kLogicalSxp);
  Int(static_cast<std::int32_t>(values.size()));
  for (std::int32_t v : values) Int(v);
}

void XdrWriter::Reals(const std::vector<double>& values, const RAttributes& attributes) {
  Flags(kRealSxp, !attributes.empty());
  Int(static_cast<std::int32_t>(values.size()));
  for (double v : values) Double(v);
  if (!attributes.empty()) Attributes(attributes);
}

void XdrWriter::Strings(const std::vector<std::optional<std::string>>& values, const RAttributes& attributes) {
  Flags(kStrSxp, !attributes.empty());
  Int(static_cast<std::int32_t>(values.size()));
  for (const auto& v : values) {
    if (v) {
      Char(*v);
    } else {
      Int(kCharSxp);
      Int(-1);  // NA_STRING
    }
  }
  if (!attributes.empty()) Attributes(attributes);
}

void XdrWriter::List(const std::vector<RValue>& elements, const RAttributes& attributes) {
  const bool has_class = std::any_of(attributes.begin(), attributes.end(),
                                     [](const auto& attribute) { return attribute.first == "class"; });
  Flags(kVecSxp, !attributes.empty(), false, has_class);
  Int(static_cast<std::int32_t>(elements.size()));
  for (const RValue& element : elements) element(*this);
  if (!attributes.empty()) Attributes(attributes);
}

void XdrWriter::CompactIntSeq(std::int32_t n, std::int32_t first) {
  Flags(kAltrepSxp);
  // info: pairlist(class symbol, package symbol, base type)
  Flags(kListSxp);
  Symbol("compact_intseq");
  Flags(kListSxp);
  Symbol("base");
  Flags(kListSxp);
  Integers({kIntSxp});
  Nil();
  Reals({static_cast<double>(n), static_cast<double>(first), 1.0});  // state
  Nil();                                                               // attributes
}

void XdrWriter::Factor(const std::vector<std::int32_t>& codes, const std::vector<std::optional<std::string>>& levels) {
  Flags(kIntSxp, true, false, true);
  Int(static_cast<std::int32_t>(codes.size()));
  for (std::int32_t v : codes) Int(v);
  Attributes({{"levels", [levels](XdrWriter& w) { w.Strings(levels); }},
              {"class", [](XdrWriter& w) { w.Strings({"factor"}); }}});
}

std::vector<std::uint8_t> SerializeFixtureFrame(int version) {
  XdrWriter w(version);
  const std::vector<std::string> names = {"userId", "movieId", "rating", "genre", "title", "timestamp"};
  RValue row_names = version == 3 ? RValue([](XdrWriter& x) { x.CompactIntSeq(5, 1); })
                                  : RValue([](XdrWriter& x) { x.Integers({kNa, -5}); });
  w.List(
      {
          [](XdrWriter& x) { x.Integers({1, 1, 2, 7, 7}); },
          [](XdrWriter& x) { x.Integers({10, 20, 10, 30, 100000}); },
          [](XdrWriter& x) { x.Reals({2.5, 3, 0.5, 5, 1e5}); },
          [](XdrWriter& x) { x.Factor({2, 1, kNa, 2, 1}, {"Comedy", "Drama|War"}); },
          [](XdrWriter& x) { x.Strings({"Heat", "Up", std::nullopt, "Ran", "M"}); },
          [](XdrWriter& x) { x.Integers({0, -3, kNa, 123456, 5}); },
      },
      {{"names", [names](XdrWriter& x) { x.Strings({names.begin(), names.end()}); }},
       {"row.names", row_names},
       {"class", [](XdrWriter& x) { x.Strings({"data.frame"}); }}});
  return w.bytes();
}

std::string FixtureFrameTsv() {
  return "userId\tmovieId\trating\tgenre\ttitle\ttimestamp\n"
         "1\t10\t2.5\tDrama|War\tHeat\t0\n"
         "1\t20\t3\tComedy\tUp\t-3\n"
         "2\t10\t0.5\tNA\tNA\tNA\n"
         "7\t30\t5\tDrama|War\tRan\t123456\n"
         "7\t100000\t1e+05\tComedy\tM\t5\n";
}

std::vector<std::uint8_t> Zlib(const std::vector<std::uint8_t>& bytes) { return Deflate(bytes, 15); }
std::vector<std::uint8_t> Gzip(const std::vector<std::uint8_t>& bytes) { return Deflate(bytes, 15 + 16); }

void WriteLazyLoadDb(const std::filesystem::path& dir,
                     const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& objects) {
  std::vector<std::uint8_t> rdb;
  std::vector<std::pair<std::int32_t, std::int32_t>> extents;
  for (const auto& [name, serialized] : objects) {
    const auto offset = static_cast<std::int32_t>(rdb.size());
    const auto length = static_cast<std::uint32_t>(serialized.size());
    for (int shift = 24; shift >= 0; shift -= 8) rdb.push_back(static_cast<std::uint8_t>(length >> shift));
    const std::vector<std::uint8_t> compressed = Zlib(serialized);
    rdb.insert(rdb.end(), compressed.begin(), compressed.end());
    extents.emplace_back(offset, static_cast<std::int32_t>(rdb.size()) - offset);
  }
  XdrWriter index(3);
  std::vector<RValue> variables;
  std::vector<std::optional<std::string>> variable_names;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    variables.push_back([extent = extents[i]](XdrWriter& x) { x.Integers({extent.first, extent.second}); });
    variable_names.emplace_back(objects[i].first);
  }
  index.List({[&](XdrWriter& x) {
                x.List(variables, {{"names", [&](XdrWriter& y) { y.Strings(variable_names); }}});
              },
              [](XdrWriter& x) { x.List({}, {{"names", [](XdrWriter& y) { y.Strings({}); }}}); },
              [](XdrWriter& x) { x.Logicals({1}); }},
             {{"names", [](XdrWriter& x) { x.Strings({"variables", "references", "compressed"}); }}});
  WriteFile(dir / "Rdata.rdb", rdb);
  WriteFile(dir / "Rdata.rdx", Gzip(index.bytes()));
}

}  // namespace stalelearn::data::testing
