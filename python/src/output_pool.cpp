#include "output_pool.hpp"

#include <mutex>
#include <new>

namespace rnngraph::bind {
namespace {

constexpr size_t kKeptBlocks = 16;                    // at most this many blocks kept,
constexpr size_t kKeptBytes = size_t(1) << 31;        // and this many bytes in all
constexpr std::align_val_t kAlign{64};

std::mutex pool_mutex;
std::vector<PooledBlock*> kept;  // most recently given back last
size_t kept_bytes = 0;

void destroy(PooledBlock* block) {
  ::operator delete(block->data, kAlign);
  delete block;
}

}  // namespace

PooledBlock* pool_take(size_t bytes) {
  if (bytes >= kPooledBytes) {
    std::lock_guard<std::mutex> lock(pool_mutex);
    // The most recent block that fits without wasting more than a quarter of itself.
    for (size_t i = kept.size(); i-- > 0;) {
      PooledBlock* block = kept[i];
      if (block->capacity >= bytes && block->capacity - bytes <= block->capacity / 4) {
        kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
        kept_bytes -= block->capacity;
        return block;
      }
    }
  }
  auto* block = new PooledBlock;
  block->data = ::operator new(bytes, kAlign);
  block->capacity = bytes;
  return block;
}

void pool_give_back(PooledBlock* block) {
  if (block->capacity < kPooledBytes) return destroy(block);
  std::vector<PooledBlock*> dropped;
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    kept.push_back(block);
    kept_bytes += block->capacity;
    while (kept.size() > kKeptBlocks || kept_bytes > kKeptBytes) {
      dropped.push_back(kept.front());
      kept_bytes -= kept.front()->capacity;
      kept.erase(kept.begin());
    }
  }
  for (PooledBlock* b : dropped) destroy(b);
}

}  // namespace rnngraph::bind
