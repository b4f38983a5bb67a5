// Fuzzes the R lazy-load database reader (apps/cli/rdata/lazyload.h)
// through its files. The input is the .rdx index's R serialization,
// uncompressed, then the separator "\n#RDB#\n", then the .rdb's bytes; the
// target gzips the index (as R does) so the fuzzer mutates what the reader
// parses rather than a checksummed stream, writes both files to a private
// temporary directory, opens the database and loads every object.
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "apps/cli/rdata/lazyload.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

const std::filesystem::path& Base() {
  static const std::filesystem::path base = [] {
    std::string dir = (std::filesystem::temp_directory_path() / "stalelearn-fuzz-XXXXXX").string();
    FUZZ_CHECK(mkdtemp(dir.data()) != nullptr);
    static const std::string remove_at_exit = dir;
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(remove_at_exit, ignored);
    });
    return std::filesystem::path(dir) / "db";
  }();
  return base;
}

void WriteFile(std::filesystem::path path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  FUZZ_CHECK(out.good());
}

std::string Gzip(std::string_view raw) {
  z_stream stream{};
  FUZZ_CHECK(deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&stream, raw.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  stream.avail_in = static_cast<uInt>(raw.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  FUZZ_CHECK(deflate(&stream, Z_FINISH) == Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stalelearn;
  const auto [index, rdb] = fuzz::SplitAt(fuzz::AsText(data, size), "\n#RDB#\n");
  std::filesystem::path rdx_path = Base(), rdb_path = Base();
  rdx_path += ".rdx";
  rdb_path += ".rdb";
  WriteFile(rdx_path, Gzip(index));
  WriteFile(rdb_path, rdb);
  Result<data::rdata::LazyLoadDb> db = data::rdata::LazyLoadDb::Open(Base());
  if (!db.ok()) {
    FUZZ_CHECK(!db.status().message().empty());
    return 0;
  }
  int loaded = 0;
  for (const std::string& name : db->ObjectNames()) {
    if (++loaded > 8) break;  // enough to reach every entry kind; bounds the time per input
    Result<data::rdata::RObjectPtr> object = db->Load(name);
    FUZZ_CHECK(object.ok() ? *object != nullptr : !object.status().message().empty());
  }
  return 0;
}
