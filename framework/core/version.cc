#include "framework/core/version.h"

#include <fmt/format.h>
#include <google/protobuf/stubs/common.h>
#include <oneapi/tbb/version.h>

namespace stalelearn {

std::string VersionString() {
  return fmt::format("stalelearn {} (protobuf {}, oneTBB {}, fmt {}.{}.{})", kVersion,
                     google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION),
                     TBB_VERSION_STRING, FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100);
}

}  // namespace stalelearn
