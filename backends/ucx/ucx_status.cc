#include "backends/ucx/ucx_status.h"

#include <fmt/format.h>

namespace stalelearn::backends::ucx {
namespace {

StatusCode CodeFor(ucs_status_t status) {
  switch (status) {
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
      return StatusCode::kInvalidArgument;
    case UCS_ERR_OUT_OF_RANGE:
    case UCS_ERR_EXCEEDS_LIMIT:
      return StatusCode::kOutOfRange;
    case UCS_ERR_TIMED_OUT:
      return StatusCode::kTimeout;
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_NOT_IMPLEMENTED:
      return StatusCode::kUnimplemented;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_NO_DEVICE:
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_BUSY:
    case UCS_ERR_CANCELED:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_IO_ERROR:
      return StatusCode::kUnavailable;
    default:
      return StatusCode::kInternal;
  }
}

}  // namespace

Status FromUcs(ucs_status_t status, std::string_view what) {
  if (status == UCS_OK) return Status::Ok();
  return Status(CodeFor(status), fmt::format("{}: {}", what, ucs_status_string(status)));
}

}  // namespace stalelearn::backends::ucx
