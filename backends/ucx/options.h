// Options of the 'ucx' backend: its config section (ucx_options.proto,
// `backend { name: "ucx" ucx { tls: "tcp" } }`, resolved with its declared
// defaults; BackendContext::params), or, for a backend created directly in
// code without a section (bench rma --backend-option, tests), the same
// fields as key=value options (BackendContext::options). Resolved once into
// UCX configuration settings (framework/README.md, convention 10: no
// environment read deep in code; UCX itself still honours UCX_* variables,
// which these override).
//
//   tls=tcp            -> UCX_TLS: transports (default: UCX picks; shared
//                         memory within a node). e.g. "tcp", "shm,self".
//   net_devices=lo     -> UCX_NET_DEVICES: network devices for tcp.
//   progress_thread=on -> a thread progresses the worker (sleeping on its
//                         event fd when idle), so the rank serves peers'
//                         RMA without calling Progress(): capabilities then
//                         say target_must_progress = false. Default off.
//
// Thread-safety: value types.
#pragma once

#include <map>
#include <string>

#include <google/protobuf/any.pb.h>

#include "backends/ucx/ucx_options.pb.h"
#include "framework/core/status.h"

namespace stalelearn::backends::ucx {

struct UcxOptions {
  // UCX configuration names without the UCX_ prefix -> values.
  std::map<std::string, std::string> ucx_settings;
  bool progress_thread = false;
};

// `params`: the resolved section, or null. `options`: key=value options of
// a backend created without a section; given both, kInvalidArgument (one
// source of options). kInvalidArgument for an unknown key or an empty value,
// naming the known ones.
Result<UcxOptions> ParseUcxOptions(const google::protobuf::Any* params,
                                   const std::map<std::string, std::string>& options);
inline Result<UcxOptions> ParseUcxOptions(const std::map<std::string, std::string>& options) {
  return ParseUcxOptions(nullptr, options);
}

}  // namespace stalelearn::backends::ucx
