#include "tests/unit/ucx/ucx_test_support.h"

#include <thread>

#include "backends/ucx/register.h"
#include "framework/transport/registry.h"

namespace stalelearn::backends::ucx::testing {

std::unique_ptr<transport::Transport> CreateUcx(transport::Bootstrap& bootstrap,
                                                const std::map<std::string, std::string>& options) {
  transport::BackendRegistry registry;
  ThrowIfError(RegisterBackend(registry));
  return ValueOrThrow(registry.Create("ucx", transport::BackendContext{bootstrap, options, registry}));
}

bool ProgressUntilAtLeast(transport::Transport& t, const std::byte* word, std::uint64_t value) {
  const auto deadline = std::chrono::steady_clock::now() + kTestTimeout;
  while (transport::LoadAcquire64(word) < value) {
    t.Progress();
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

Status BarrierWhileProgressing(transport::Transport& t, transport::Bootstrap& bootstrap) {
  std::jthread progress([&t](std::stop_token stop) {
    while (!stop.stop_requested()) {
      t.Progress();
      std::this_thread::yield();
    }
  });
  return bootstrap.Barrier();
}

std::vector<std::unique_ptr<transport::RemoteRegion>> ExchangeAndImport(transport::Transport& t,
                                                                        transport::Bootstrap& bootstrap,
                                                                        const transport::MemoryRegion& region,
                                                                        const std::string& name) {
  auto keys = ValueOrThrow(bootstrap.AllGather(name, region.key()));
  std::vector<std::unique_ptr<transport::RemoteRegion>> remotes;
  for (int r = 0; r < bootstrap.world_size(); ++r) {
    remotes.push_back(ValueOrThrow(t.Import(transport::Rank{r}, keys[r])));
  }
  return remotes;
}

}  // namespace stalelearn::backends::ucx::testing
