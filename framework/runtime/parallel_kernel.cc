#include "framework/runtime/parallel_kernel.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

#include "framework/core/sanitizer.h"

namespace stalelearn::runtime {

// One chunk's private copies of the rows it touched, as a ModelView. Rows
// live in fixed blocks that never move, so spans the kernel holds stay
// valid while it touches more rows. Used by one thread at a time.
class ChunkOverlay final : public model::ModelView {
 public:
  explicit ChunkOverlay(const model::Replica& replica) : replica_(replica) {
    local_of_slot_.resize(replica.tables().size());
  }

  std::span<float> FloatRow(model::TableId table, model::RowId row) override {
    std::byte* bytes = Row(table, row);
    return {reinterpret_cast<float*>(bytes), static_cast<std::size_t>(replica_.tables()[table.value].width())};
  }
  std::span<std::int32_t> IntRow(model::TableId table, model::RowId row) override {
    std::byte* bytes = Row(table, row);
    return {reinterpret_cast<std::int32_t*>(bytes),
            static_cast<std::size_t>(replica_.tables()[table.value].width())};
  }

  // Adds (copy now - copy at first touch) of every touched row to `replica`
  // (through its touch tracking), then forgets the rows.
  void AddChangesTo(model::Replica& replica) {
    for (const Touched& t : touched_) {
      const model::RowBlock& block = replica.tables()[t.table.value];
      const model::RowId row{replica.RowOfSlot(t.table, t.slot)};
      const std::int32_t width = block.width();
      if (block.type() == model::ElementType::kFloat32) {
        float* into = replica.FloatRow(t.table, row).data();
        const auto* now = reinterpret_cast<const float*>(t.now);
        const auto* before = reinterpret_cast<const float*>(t.now + block.row_bytes());
        for (std::int32_t i = 0; i < width; ++i) into[i] += now[i] - before[i];
      } else {
        std::int32_t* into = replica.IntRow(t.table, row).data();
        const auto* now = reinterpret_cast<const std::int32_t*>(t.now);
        const auto* before = reinterpret_cast<const std::int32_t*>(t.now + block.row_bytes());
        for (std::int32_t i = 0; i < width; ++i) {
          into[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(into[i]) +
                                              (static_cast<std::uint32_t>(now[i]) - static_cast<std::uint32_t>(before[i])));
        }
      }
      local_of_slot_[t.table.value][static_cast<std::size_t>(t.slot)] = nullptr;
    }
    touched_.clear();
    block_ = 0;
    used_ = 0;
  }

 private:
  static constexpr std::size_t kBlockBytes = 256 * 1024;

  struct Touched {
    model::TableId table;
    std::int64_t slot;
    std::byte* now;  // row_bytes of the copy, then row_bytes as first touched
  };

  std::byte* Row(model::TableId table, model::RowId row) {
    const std::int64_t slot = replica_.CheckedSlot(table, row);
    std::vector<std::byte*>& index = local_of_slot_[table.value];
    const model::RowBlock& block = replica_.tables()[table.value];
    if (index.empty()) index.assign(static_cast<std::size_t>(block.rows()), nullptr);
    std::byte*& copy = index[static_cast<std::size_t>(slot)];
    if (copy == nullptr) {
      copy = Allocate(2 * block.row_bytes());
      std::memcpy(copy, block.RowBytes(slot), block.row_bytes());
      std::memcpy(copy + block.row_bytes(), block.RowBytes(slot), block.row_bytes());
      touched_.push_back({table, slot, copy});
    }
    return copy;
  }

  std::byte* Allocate(std::size_t bytes) {
    if (bytes > kBlockBytes) {  // a row wider than a block gets a block of its own
      oversized_.push_back(std::make_unique<std::byte[]>(bytes));
      return oversized_.back().get();
    }
    if (blocks_.empty() || used_ + bytes > kBlockBytes) {
      if (!blocks_.empty()) ++block_;
      if (block_ == blocks_.size()) blocks_.push_back(std::make_unique<std::byte[]>(kBlockBytes));
      used_ = 0;
    }
    std::byte* at = blocks_[block_].get() + used_;
    used_ += (bytes + 63) / 64 * 64;
    return at;
  }

  const model::Replica& replica_;
  std::vector<std::vector<std::byte*>> local_of_slot_;  // [table][replica slot]: the copy, or null
  std::vector<Touched> touched_;                        // first-touch order
  std::vector<std::unique_ptr<std::byte[]>> blocks_;    // kept across clocks
  std::vector<std::unique_ptr<std::byte[]>> oversized_;
  std::size_t block_ = 0;  // the block being filled
  std::size_t used_ = 0;   // bytes used in it
};

ParallelKernel::ParallelKernel(const App& app, int threads)
    : app_(app), threads_(std::max(threads, 1)), arena_(threads_) {}

ParallelKernel::~ParallelKernel() = default;

void ParallelKernel::Run(std::span<const std::int64_t> samples, model::Replica& replica, const KernelContext& ctx) {
  const auto chunks = static_cast<std::size_t>(threads_);
  while (overlays_.size() < chunks) overlays_.push_back(std::make_unique<ChunkOverlay>(replica));
  std::vector<WorkCounters> work(chunks);
  const std::size_t n = samples.size();
  TbbHappensBefore hb;  // TBB's ordering, told to TSan (framework/core/sanitizer.h)
  hb.BeforeLoop();
  arena_.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, chunks, 1),
        [&](const tbb::blocked_range<std::size_t>& range) {
          hb.ChunkBegins();
          for (std::size_t c = range.begin(); c != range.end(); ++c) {
            const std::size_t begin = n * c / chunks;
            const std::size_t end = n * (c + 1) / chunks;
            if (begin == end) continue;
            // Chunk c's own stream: a pure function of (seed, rank, clock, chunk).
            RandomStream random = RandomStream::For(ctx.info.seed ^ ((c + 1) * 0xA24BAED4963EE407ull),
                                                    ctx.info.rank.value, ctx.clock);
            KernelContext chunk_ctx{ctx.info, ctx.epoch, ctx.clock, random, ctx.state, work[c]};
            app_.UpdateBatch(samples.subspan(begin, end - begin), *overlays_[c], chunk_ctx);
          }
          hb.ChunkEnds();
        },
        tbb::simple_partitioner());
  });
  hb.AfterLoop();
  for (std::size_t c = 0; c < chunks; ++c) {
    overlays_[c]->AddChangesTo(replica);
    ctx.work += work[c];
  }
}

}  // namespace stalelearn::runtime
