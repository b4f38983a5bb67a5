// UCX status codes as stalelearn Status (framework/README.md, convention 7): the message carries
// ucs_status_string and what was being done. Thread-safe (pure functions).
#pragma once

#include <ucs/type/status.h>

#include <string_view>

#include "framework/core/status.h"

namespace stalelearn::backends::ucx {

// OK for UCS_OK; otherwise "<what>: <ucs_status_string>" with a matching code.
Status FromUcs(ucs_status_t status, std::string_view what);

}  // namespace stalelearn::backends::ucx
