// Options of the 'ucx' backend (config.backend.options), resolved once into
// UCX configuration settings (STYLE.md 10: no environment read deep in code;
// UCX itself still honours UCX_* variables, which these override).
//
//   tls=tcp            -> UCX_TLS: transports (default: UCX picks; shared
//                         memory within a node). e.g. "tcp", "shm,self".
//   net_devices=lo     -> UCX_NET_DEVICES: network devices for tcp.
//
// Thread-safety: value types.
#pragma once

#include <map>
#include <string>

#include "framework/core/status.h"

namespace stalelearn::backends::ucx {

struct UcxOptions {
  // UCX configuration names without the UCX_ prefix -> values.
  std::map<std::string, std::string> ucx_settings;
};

// kInvalidArgument for an unknown option or an empty value, naming the known ones.
Result<UcxOptions> ParseUcxOptions(const std::map<std::string, std::string>& options);

}  // namespace stalelearn::backends::ucx
