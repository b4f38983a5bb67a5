// A file's bytes, read-only, for the dataset readers: a regular file is
// mapped (mmap), so its bytes come straight from the page cache, where
// reading it into a string first zero-filled and then copied the whole file
// (367 MB for the 20 M-rating set, a fifth of its load time on this VM);
// anything else (a pipe, /dev/stdin) is read into memory (ReadWholeFile).
// Errors as ReadWholeFile's: NotFound, InvalidArgument for a directory,
// Unavailable when it cannot be opened or read.
//
// A mapped file that another process truncates while it is read ends the
// reader with SIGBUS: the readers map the project's fetched and generated
// data, which nothing rewrites in place (fetch-data.sh and `data synth`
// write a new file and rename it).
// Thread-safety: text() may be read from several threads at once. Lifetime:
// the string_view text() returns is valid while the MappedFile lives.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "framework/core/status.h"

namespace stalelearn::data {

class MappedFile {
 public:
  static Result<MappedFile> Open(const std::filesystem::path& file);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::string_view text() const { return mapped_ != nullptr ? std::string_view(mapped_, size_) : std::string_view(read_); }

 private:
  MappedFile() = default;
  void Unmap();

  const char* mapped_ = nullptr;  // the mapping, or null when read_ holds the bytes
  std::size_t size_ = 0;
  std::string read_;
};

}  // namespace stalelearn::data
