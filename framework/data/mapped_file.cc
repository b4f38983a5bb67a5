#include "framework/data/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "framework/data/text_lines.h"

namespace stalelearn::data {

Result<MappedFile> MappedFile::Open(const std::filesystem::path& file) {
  MappedFile mapped;
  // Not a regular file (a pipe, a directory, an empty file, which cannot be
  // mapped) or not openable: ReadWholeFile reads it or names the error.
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    if (fd >= 0) ::close(fd);
    STALELEARN_ASSIGN_OR_RETURN(mapped.read_, ReadWholeFile(file));
    return mapped;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* at = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_error = errno;
  ::close(fd);  // the mapping keeps the file
  if (at == MAP_FAILED) {
    return Unavailable(fmt::format("{}: cannot map: {}", file.string(), std::strerror(map_error)));
  }
  // The readers cut it into one piece per core and read each front to back.
  ::madvise(at, size, MADV_WILLNEED);
  mapped.mapped_ = static_cast<const char*>(at);
  mapped.size_ = size;
  return mapped;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : mapped_(std::exchange(other.mapped_, nullptr)), size_(std::exchange(other.size_, 0)),
      read_(std::move(other.read_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    mapped_ = std::exchange(other.mapped_, nullptr);
    size_ = std::exchange(other.size_, 0);
    read_ = std::move(other.read_);
  }
  return *this;
}

MappedFile::~MappedFile() { Unmap(); }

void MappedFile::Unmap() {
  if (mapped_ != nullptr) ::munmap(const_cast<char*>(mapped_), size_);
  mapped_ = nullptr;
  size_ = 0;
}

}  // namespace stalelearn::data
