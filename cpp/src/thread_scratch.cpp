#include "thread_scratch.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "rnngraph/memory.hpp"

namespace rnngraph {

struct Scratch {
  // Taken by a lease, or by a release: a release takes only a scratch no lease holds (its
  // own thread's included), and a lease waits only while a release frees it.
  std::atomic<bool> busy{false};
  void* data = nullptr;
  std::size_t capacity = 0;
  bool take() { return !busy.exchange(true, std::memory_order_acquire); }
  void give() { busy.store(false, std::memory_order_release); }
};

namespace {

// Every living thread's scratch. The mutex guards the list only: a lease never takes it.
struct Registry {
  std::mutex mutex;
  std::vector<Scratch*> all;
  std::atomic<std::size_t> bytes{0};
};

// Never destroyed: threads may end during interpreter shutdown.
Registry& registry() {
  static Registry* instance = new Registry;
  return *instance;
}

void drop(Scratch& s) {
  if (!s.data) return;
  free_block(s.data, s.capacity);
  registry().bytes.fetch_sub(s.capacity, std::memory_order_relaxed);
  s.data = nullptr;
  s.capacity = 0;
}

// A thread's scratch, listed while the thread lives.
struct Owner {
  Scratch* scratch = nullptr;
  Scratch& get() {
    if (!scratch) {
      auto made = new Scratch;
      std::lock_guard<std::mutex> lock(registry().mutex);
      registry().all.push_back(made);
      scratch = made;
    }
    return *scratch;
  }
  ~Owner() {
    if (!scratch) return;
    {
      std::lock_guard<std::mutex> lock(registry().mutex);
      auto& all = registry().all;
      all.erase(std::remove(all.begin(), all.end(), scratch), all.end());
    }
    drop(*scratch);
    delete scratch;
  }
};
thread_local Owner owner;

// fork: the list's mutex is held across it. The child has only the forking thread, whose
// scratch stays listed; the other threads' scratch is the parent's (leased there, maybe),
// left alone.
void lock_before_fork() { registry().mutex.lock(); }
void unlock_after_fork() { registry().mutex.unlock(); }
void unlock_in_child() {
  Registry& r = registry();
  r.all.clear();
  r.bytes.store(0, std::memory_order_relaxed);
  if (owner.scratch) {
    r.all.push_back(owner.scratch);
    r.bytes.store(owner.scratch->capacity, std::memory_order_relaxed);
  }
  r.mutex.unlock();
}
[[maybe_unused]] const int fork_handlers =
    pthread_atfork(lock_before_fork, unlock_after_fork, unlock_in_child);

}  // namespace

ScratchLease::ScratchLease(std::size_t bytes) : scratch_(&owner.get()) {
  while (!scratch_->take()) std::this_thread::yield();  // (a release is freeing it)
  if (scratch_->capacity < bytes) {
    try {
      drop(*scratch_);
      scratch_->data = allocate_block(bytes);  // (may release the others' unused scratch)
    } catch (...) {
      scratch_->give();
      throw;
    }
    scratch_->capacity = bytes;
    registry().bytes.fetch_add(bytes, std::memory_order_relaxed);
    wake_releaser();
  }
  data_ = scratch_->data;
}

// (A lease records nothing shared, no clock read and no store to a line other threads
// write: the releaser goes by the kept blocks' last use and the scratch's last growth, and
// never frees a scratch that is leased.)
ScratchLease::~ScratchLease() { scratch_->give(); }

std::size_t scratch_bytes() { return registry().bytes.load(std::memory_order_relaxed); }

bool release_unused_scratch() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (Scratch* s : r.all) {
    if (!s->take()) continue;  // leased now
    drop(*s);
    s->give();
  }
  return r.bytes.load(std::memory_order_relaxed) == 0;
}

}  // namespace rnngraph
