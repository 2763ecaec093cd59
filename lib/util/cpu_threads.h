// How many CPU threads one rank should compute with: the cores the launcher bound it to
// (sched_getaffinity), or, when it was not bound (the affinity is the whole machine), the
// machine's cores split evenly over the ranks on this node. Without this every rank would run
// libtorch with all cores and N ranks would oversubscribe the node N times.
#pragma once

namespace st {

int cpu_threads_per_rank(int ranks_on_node);

}  // namespace st
