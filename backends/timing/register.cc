// Registration of the 'timing' backend: its options message (the config
// section `backend { name: "timing" timing { ... } }`, timing_options.proto;
// the inner backend's section may be set beside it, `ucx { tls: "tcp" }`)
// and a factory that wraps the inner backend named by the options, prices it
// with the presets, and, when the ranks are threads of one process, shares
// one VirtualTimeScheduler among them through the in-process group.
#include "backends/timing/register.h"

#include <fmt/format.h>

#include "backends/timing/presets.h"
#include "backends/timing/timing_options.h"
#include "backends/timing/timing_transport.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::backends::timing {
namespace {

// Ranks sharing `options.cores` cores (timing_options.h): each price of work
// on a core is stretched by `share`. Scaling the presets does it exactly: the
// compute price is a max of terms each divided by a peak or bandwidth or
// multiplied by a latency.
// `work_too` false: compute and merge work are stretched when charged, by the
// ranks busy at that moment (HardwareModel::shared_cores); only the link's
// overhead and the idle polls are stretched here.
void ShareCores(double share, proto::MemoryPreset& memory, proto::LinkPreset& link, proto::ComputePreset& compute,
                bool work_too) {
  if (share <= 1) return;
  link.mutable_per_op_overhead_ns()->set_value(link.per_op_overhead_ns().value() * share);
  if (compute.has_idle()) {  // a poll and a yield run on a shared core; a sleep does not
    compute.mutable_idle()->mutable_poll_ns()->set_value(compute.idle().poll_ns().value() * share);
    compute.mutable_idle()->mutable_yield_ns()->set_value(compute.idle().yield_ns().value() * share);
  }
  if (!work_too) return;
  compute.mutable_peak_gflops()->set_value(compute.peak_gflops().value() / share);
  compute.mutable_memory_bandwidth_gb_per_s()->set_value(compute.memory_bandwidth_gb_per_s().value() / share);
  compute.mutable_memory_latency_ns()->set_value(compute.memory_latency_ns().value() * share);
  if (compute.has_kernel()) {
    compute.mutable_kernel()->mutable_ns_per_sample()->set_value(compute.kernel().ns_per_sample().value() * share);
  }
  if (memory.has_dram()) {  // merged by a host core; PIM devices merge in the memory
    memory.mutable_dram()->mutable_bandwidth_gb_per_s()->set_value(memory.dram().bandwidth_gb_per_s().value() / share);
  }
}

// `scheduled`: the ranks share one virtual-time scheduler, which knows who is busy.
Result<HardwareModel> LoadHardwareModel(const TimingOptions& options, int world_size, bool scheduled) {
  const std::filesystem::path dir = options.preset_dir.empty() ? DefaultPresetDir() : options.preset_dir;
  STALELEARN_ASSIGN_OR_RETURN(proto::MemoryPreset memory, LoadMemoryPreset(dir, options.memory));
  STALELEARN_ASSIGN_OR_RETURN(proto::LinkPreset link, LoadLinkPreset(dir, options.link));
  if (options.link_bandwidth_gb_per_s > 0) link.mutable_bandwidth_gb_per_s()->set_value(options.link_bandwidth_gb_per_s);
  STALELEARN_ASSIGN_OR_RETURN(proto::ComputePreset compute, LoadComputePreset(dir, options.compute));
  if (options.cores > 0) ShareCores(static_cast<double>(world_size) / options.cores, memory, link, compute, !scheduled);
  return HardwareModel{MemoryModel(memory), LinkModel(link), ComputeModel(compute), scheduled ? options.cores : 0};
}

// The job's scheduler, shared by its ranks, or null without deterministic emulation.
Result<std::shared_ptr<VirtualTimeScheduler>> JobScheduler(const TimingOptions& options,
                                                           const transport::BackendContext& context,
                                                           const transport::Transport& inner) {
  auto* in_process = dynamic_cast<transport::InProcessBootstrap*>(&context.bootstrap);
  const bool can_schedule = in_process != nullptr && inner.capabilities().in_process;
  if (options.schedule == ScheduleMode::kNone) return std::shared_ptr<VirtualTimeScheduler>();
  if (!can_schedule) {
    if (options.schedule == ScheduleMode::kVirtualTime) {
      return InvalidArgument(fmt::format(
          "option schedule=virtual-time needs ranks as threads of one process over an in-process inner "
          "backend; inner '{}' is not",
          options.inner));
    }
    return std::shared_ptr<VirtualTimeScheduler>();
  }
  transport::InProcessGroup& group = in_process->group();
  auto scheduler = group.GetOrCreateShared<VirtualTimeScheduler>("timing/virtual-time-scheduler", [&] {
    const transport::VirtualDuration quantum(static_cast<std::int64_t>(options.quantum_ns * 1000));
    return std::make_shared<VirtualTimeScheduler>(group.world_size(), group.deadline(), quantum);
  });
  if (scheduler == nullptr) return Internal("timing: the in-process group holds another object as scheduler");
  return scheduler;
}

Result<std::unique_ptr<transport::Transport>> CreateTimingTransport(const transport::BackendContext& context) {
  STALELEARN_ASSIGN_OR_RETURN(TimingOptions options, ParseTimingOptions(context.params, context.options));
  // The inner backend's section (config.backend.wrapped), or its key=value
  // options (inner.KEY) when the timing backend was created directly.
  const google::protobuf::Any* inner_params = nullptr;
  if (context.wrapped != nullptr) {
    if (const auto it = context.wrapped->find(options.inner); it != context.wrapped->end()) inner_params = &it->second;
  }
  const transport::BackendContext inner_context{context.bootstrap, options.inner_options, context.registry,
                                                inner_params, context.wrapped};
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<transport::Transport> inner,
                              context.registry.Create(options.inner, inner_context));
  STALELEARN_ASSIGN_OR_RETURN(std::shared_ptr<VirtualTimeScheduler> scheduler,
                              JobScheduler(options, context, *inner));
  STALELEARN_ASSIGN_OR_RETURN(HardwareModel model,
                              LoadHardwareModel(options, inner->world_size(), /*scheduled=*/scheduler != nullptr));
  auto timed = std::make_unique<TimingTransport>(std::move(inner), std::move(model), scheduler);
  if (options.shared_ports) {
    if (scheduler == nullptr) {
      return InvalidArgument("option shared_ports needs ranks as threads of one process under the virtual-time "
                             "scheduler");
    }
    transport::InProcessGroup& group = static_cast<transport::InProcessBootstrap&>(context.bootstrap).group();
    auto links = group.GetOrCreateShared<ServingLinks>(
        "timing/serving-links", [&] { return std::make_shared<ServingLinks>(group.world_size()); });
    if (links == nullptr) return Internal("timing: the in-process group holds another object as serving links");
    timed->ShareServingLinks(std::move(links));
  }
  return std::unique_ptr<transport::Transport>(std::move(timed));
}

}  // namespace

Status RegisterBackend(transport::BackendRegistry& registry) {
  config::Section section{"timing", &stalelearn::timing::TimingBackendOptions::default_instance(),
                          [](google::protobuf::Message& params, proto::Config& config) {
                            auto& timing = static_cast<stalelearn::timing::TimingBackendOptions&>(params);
                            STALELEARN_RETURN_IF_ERROR(ResolveTimingSection(timing));
                            // Only the inner backend's section may be set beside this one.
                            for (const auto& [name, section] : config.backend().wrapped()) {
                              if (name != timing.inner()) {
                                return InvalidArgument(fmt::format(
                                    "backend.{} is set but backend.timing.inner is '{}'", name, timing.inner()));
                              }
                            }
                            return Status::Ok();
                          },
                          /*wraps=*/true};
  return registry.Add("timing",
                      "simulated PIM, link and compute latencies in virtual time over another backend "
                      "(section timing { inner memory link compute preset_dir schedule link_bandwidth_gb_per_s "
                      "quantum_ns cores shared_ports })",
                      CreateTimingTransport, std::move(section));
}

}  // namespace stalelearn::backends::timing
