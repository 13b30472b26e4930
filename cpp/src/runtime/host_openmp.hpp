// A host's OpenMP pool as rnngraph's workers. Inside PyTorch, torch's intra-op threads spin for
// a while after each of its parallel ops (libgomp's default wait policy). rnngraph's own
// workers would then compete with them for the cores; run on torch's threads instead, the two
// libraries share one pool and take turns on it. The host library must already be loaded
// (rnngraph.torch passes torch's libgomp); rnngraph itself never links an OpenMP runtime.
#pragma once

#include "runtime/job.hpp"

namespace rnngraph::runtime {

// (rnngraph/threads.hpp: use_host_openmp adopts the pool, host_openmp names it.)

// Runs `job` with a team of up to `team` threads of the adopted pool, the calling thread as
// slot 0 (a pool that gives fewer threads leaves their shares to the others). Returns false,
// running nothing, when no pool is adopted or this process is a fork of the one that adopted
// it (an OpenMP pool does not survive a fork).
bool run_on_host_openmp(Job& job, int team);

}  // namespace rnngraph::runtime
