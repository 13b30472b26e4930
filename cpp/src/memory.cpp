#include "rnngraph/memory.hpp"

#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace rnngraph {
namespace {

constexpr std::size_t kHugePage = std::size_t(1) << 21;

std::align_val_t alignment_for(std::size_t bytes) {
  return std::align_val_t{bytes >= kHugePage ? kHugePage : 64};
}

}  // namespace

void* allocate_block(std::size_t bytes) {
  void* p = ::operator new(bytes, alignment_for(bytes));
#if defined(MADV_HUGEPAGE)
  if (bytes >= kHugePage) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return p;
}

void free_block(void* p, std::size_t bytes) { ::operator delete(p, alignment_for(bytes)); }

}  // namespace rnngraph
