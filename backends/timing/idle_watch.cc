#include "backends/timing/idle_watch.h"

#include <cstring>

namespace stalelearn::backends::timing {

void IdleWatch::Record(std::shared_ptr<const transport::RemoteRegion> src, std::uint64_t offset, std::size_t bytes,
                       const void* seen) {
  if (gave_up_) return;
  if (seen_.size() + bytes > kMaxBytes) {
    GiveUp();
    return;
  }
  const auto* begin = static_cast<const std::byte*>(seen);
  reads_.push_back({std::move(src), offset, seen_.size(), bytes});
  seen_.insert(seen_.end(), begin, begin + bytes);
}

void IdleWatch::Reset() {
  reads_.clear();
  seen_.clear();
  gave_up_ = false;
}

bool IdleWatch::Unchanged() {
  if (!usable()) return false;
  for (const Read& read : reads_) {
    scratch_.resize(read.bytes);
    Result<transport::RequestPtr> got = inner_.Get(scratch_.data(), read.bytes, *read.src, read.offset);
    if (!got.ok() || !(*got)->Test()) return false;
    if (std::memcmp(scratch_.data(), seen_.data() + read.first, read.bytes) != 0) return false;
  }
  return true;
}

}  // namespace stalelearn::backends::timing
