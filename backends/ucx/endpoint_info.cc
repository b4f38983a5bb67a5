#include "backends/ucx/endpoint_info.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>

namespace stalelearn::backends::ucx {

std::vector<std::string> ParseLaneTransports(std::string_view print_info) {
  // "lane[<n>]: <rsc index>:<tl>/<device>.<port> ..."
  static const std::regex kLane(R"(lane\[\d+\]:\s+\d+:([A-Za-z0-9_]+)/([^\s]+?)(\.\d+)?\s)");
  std::vector<std::string> transports;
  const std::string text(print_info);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kLane); it != std::sregex_iterator(); ++it) {
    std::string name = (*it)[1].str() + "/" + (*it)[2].str();
    if (std::ranges::find(transports, name) == transports.end()) transports.push_back(std::move(name));
  }
  return transports;
}

std::vector<std::string> EndpointTransports(ucp_ep_h endpoint) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* stream = open_memstream(&buffer, &size);
  if (stream == nullptr) return {};
  ucp_ep_print_info(endpoint, stream);
  std::fclose(stream);
  std::vector<std::string> transports = ParseLaneTransports(std::string_view(buffer, size));
  std::free(buffer);
  return transports;
}

}  // namespace stalelearn::backends::ucx
