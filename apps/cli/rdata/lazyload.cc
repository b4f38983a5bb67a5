#include "apps/cli/rdata/lazyload.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>

#include "apps/cli/rdata/unserialize.h"
#include "framework/data/text_lines.h"

namespace stalelearn::data::rdata {
namespace {

constexpr std::size_t kMaxIndexBytes = 64u << 20;
// zlib cannot expand data by more than ~1032x; a larger claimed length is corrupt.
constexpr std::uint64_t kMaxZlibRatio = 1032;

std::span<const std::uint8_t> AsBytes(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

// Offset or length stored as an integer or a double (R uses doubles past 2^31).
Result<std::uint64_t> IndexNumber(const RObject& pair, std::size_t i, std::string_view name) {
  double value = -1;
  if (pair.type == SexpType::kInteger && pair.integers.size() == 2) value = pair.integers[i];
  if (pair.type == SexpType::kReal && pair.reals.size() == 2) value = pair.reals[i];
  if (!(value >= 0 && value < 9.0e15)) {
    return DataLoss(fmt::format("index entry of '{}' is not a valid (offset, length) pair", name));
  }
  return static_cast<std::uint64_t>(value);
}

const RObject* ListElement(const RObject& list, std::string_view name) {
  const RObject* names = list.Attribute("names");
  if (list.type != SexpType::kList || names == nullptr || names->type != SexpType::kString) return nullptr;
  for (std::size_t i = 0; i < names->strings.size() && i < list.elements.size(); ++i) {
    if (names->strings[i] && *names->strings[i] == name) return list.elements[i].get();
  }
  return nullptr;
}

}  // namespace

Result<std::vector<std::uint8_t>> Inflate(std::span<const std::uint8_t> compressed, std::size_t max_output) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 32) != Z_OK) return Internal("zlib: inflateInit2 failed");
  // One byte beyond max_output tells "exactly max_output" from "more".
  const std::size_t cap = max_output + 1;
  std::vector<std::uint8_t> out(std::min(cap, std::max<std::size_t>(compressed.size() * 4, 4096)));
  stream.next_in = const_cast<Bytef*>(compressed.data());
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::size_t produced = 0;
  int rc = Z_OK;
  while (produced < cap) {
    if (produced == out.size()) out.resize(std::min(cap, out.size() * 2));
    stream.next_out = out.data() + produced;
    stream.avail_out = static_cast<uInt>(std::min<std::size_t>(out.size() - produced, UINT32_MAX));
    rc = inflate(&stream, Z_NO_FLUSH);
    produced = static_cast<std::size_t>(stream.next_out - out.data());
    if (rc != Z_OK) break;  // Z_STREAM_END, an error, or Z_BUF_ERROR: input ended early
  }
  const std::string zlib_message = stream.msg != nullptr ? stream.msg : zError(rc);
  inflateEnd(&stream);
  if (produced > max_output) return DataLoss(fmt::format("decompressed data exceeds {} bytes", max_output));
  if (rc == Z_STREAM_END) {
    out.resize(produced);
    return out;
  }
  if (rc == Z_OK || rc == Z_BUF_ERROR) return DataLoss("compressed stream is truncated");
  return DataLoss(fmt::format("corrupt compressed stream ({})", zlib_message));
}

Result<LazyLoadDb> LazyLoadDb::Open(const std::filesystem::path& base) {
  std::filesystem::path rdx = base;
  rdx += ".rdx";
  STALELEARN_ASSIGN_OR_RETURN(std::string compressed, ReadWholeFile(rdx));
  Result<std::vector<std::uint8_t>> raw = Inflate(AsBytes(compressed), kMaxIndexBytes);
  if (!raw.ok()) return raw.status().WithContext(rdx.string());
  Result<RObjectPtr> index = Unserialize(*raw);
  if (!index.ok()) return index.status().WithContext(rdx.string());

  const RObject* variables = ListElement(**index, "variables");
  const RObject* names = variables ? variables->Attribute("names") : nullptr;
  const RObject* compressed_flag = ListElement(**index, "compressed");
  if (variables == nullptr || names == nullptr || names->type != SexpType::kString ||
      names->strings.size() != variables->elements.size() || compressed_flag == nullptr ||
      compressed_flag->integers.size() != 1) {
    return DataLoss(fmt::format("{}: not a lazy-load index (needs named 'variables' and 'compressed')", rdx.string()));
  }
  LazyLoadDb db;
  db.rdb_path_ = base;
  db.rdb_path_ += ".rdb";
  db.compression_ = compressed_flag->integers[0];
  for (std::size_t i = 0; i < names->strings.size(); ++i) {
    std::string name = names->strings[i].value_or("NA");
    STALELEARN_ASSIGN_OR_RETURN(std::uint64_t offset, IndexNumber(*variables->elements[i], 0, name));
    STALELEARN_ASSIGN_OR_RETURN(std::uint64_t length, IndexNumber(*variables->elements[i], 1, name));
    db.entries_.push_back({std::move(name), offset, length});
  }
  return db;
}

std::vector<std::string> LazyLoadDb::ObjectNames() const {
  std::vector<std::string> names;
  for (const Entry& entry : entries_) names.push_back(entry.name);
  return names;
}

Result<RObjectPtr> LazyLoadDb::Load(std::string_view name) const {
  auto entry = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.name == name; });
  if (entry == entries_.end()) {
    return NotFound(fmt::format("no object '{}' in {} (it has {} objects)", name, rdb_path_.string(), entries_.size()));
  }
  const std::string where = fmt::format("{} entry '{}'", rdb_path_.string(), name);
  std::error_code ec;
  const std::uintmax_t file_size = std::filesystem::file_size(rdb_path_, ec);
  if (ec) return NotFound(fmt::format("{}: {}", rdb_path_.string(), ec.message()));
  if (entry->offset > file_size || entry->length > file_size - entry->offset) {
    return DataLoss(fmt::format("{}: bytes {}..{} lie beyond the end of the file ({} bytes)", where, entry->offset,
                                entry->offset + entry->length, file_size));
  }
  std::vector<std::uint8_t> blob(entry->length);
  std::ifstream in(rdb_path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(entry->offset));
  in.read(reinterpret_cast<char*>(blob.data()), static_cast<std::streamsize>(blob.size()));
  if (!in) return Unavailable(fmt::format("{}: read failed", where));

  std::vector<std::uint8_t> serialized;
  if (compression_ == 0) {
    serialized = std::move(blob);
  } else if (compression_ == 1) {
    if (blob.size() < 4) return DataLoss(fmt::format("{}: shorter than its 4-byte length header", where));
    const std::uint64_t declared = std::uint64_t{blob[0]} << 24 | std::uint64_t{blob[1]} << 16 |
                                   std::uint64_t{blob[2]} << 8 | std::uint64_t{blob[3]};
    if (declared > (blob.size() - 4) * kMaxZlibRatio + 64) {
      return DataLoss(fmt::format("{}: declared length {} is impossible for {} compressed bytes", where, declared,
                                  blob.size() - 4));
    }
    Result<std::vector<std::uint8_t>> inflated = Inflate(std::span(blob).subspan(4), declared);
    if (!inflated.ok()) return inflated.status().WithContext(where);
    if (inflated->size() != declared) {
      return DataLoss(fmt::format("{}: decompressed to {} bytes, header says {}", where, inflated->size(), declared));
    }
    serialized = std::move(inflated).value();
  } else {
    return Unimplemented(fmt::format("{}: compression type {} (bzip2/xz) is not supported, only zlib", where,
                                     compression_));
  }
  Result<RObjectPtr> object = Unserialize(serialized);
  if (!object.ok()) return object.status().WithContext(where);
  return object;
}

}  // namespace stalelearn::data::rdata
