// Version of stalelearn and of the libraries it was built against.
#pragma once

#include <string>
#include <string_view>

namespace stalelearn {

inline constexpr std::string_view kVersion = "0.1.0";

// "stalelearn 0.1.0 (protobuf 3.21.12, fmt 9.1.0, ...)"
std::string VersionString();

}  // namespace stalelearn
