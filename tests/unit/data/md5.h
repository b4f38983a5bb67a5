// MD5 (RFC 1321) of a byte string as 32 lowercase hex digits; used to compare
// fetched files with the checksums in deploy/README.md. Reentrant.
#pragma once

#include <string>
#include <string_view>

namespace stalelearn::data::testing {

std::string Md5Hex(std::string_view bytes);

}  // namespace stalelearn::data::testing
