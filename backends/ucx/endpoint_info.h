// What UCX says an endpoint uses: the transport and device of each of its
// lanes, read from ucp_ep_print_info (UCX 1.13 has no ucp_ep_query field for
// transports). Lines look like
//   #                 lane[1]:  4:sysv/memory.0 md[2]  -> md[2]/sysv/sysdev[255]
// and give "sysv/memory" (the trailing ".N" is the device's port/index).
//
// Thread-safety: stateless functions. EndpointTransports must not race with a
// close of the endpoint.
#pragma once

#include <ucp/api/ucp.h>

#include <string>
#include <string_view>
#include <vector>

namespace stalelearn::backends::ucx {

// Distinct "transport/device" names of the lanes in a ucp_ep_print_info text,
// in lane order. Lines that are not lanes are ignored.
std::vector<std::string> ParseLaneTransports(std::string_view print_info);

// The same for a live endpoint. Empty if the text cannot be captured.
std::vector<std::string> EndpointTransports(ucp_ep_h endpoint);

}  // namespace stalelearn::backends::ucx
