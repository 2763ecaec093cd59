// Test-only faults that the e2e tests inject into real runs, each set by one environment
// variable and read here once (docs/testing.md); library code marks where a fault may strike
// and knows no variable:
//   ST_TEST_SIGNAL_AT=<phase>:<USR1|TERM>  raise that signal when the run reaches <phase>
//   ST_TEST_KILL_IN_SAVE=<step>            SIGKILL the last shard's writer in the save of <step>,
//                                          after its file is written, before the commit
//   ST_TEST_STALL_AT=<rank>:<step>:<unit>  that rank stops for good before gathering <unit>
//   ST_TEST_STEP_SECONDS=<step>:<seconds>  from <step> on, each step lasts at least <seconds>
//                                          (a run that outlasts Slurm's timers on any machine)
#pragma once

#include <cstddef>
#include <cstdint>

namespace st {

// Raises the signal when ST_TEST_SIGNAL_AT names `phase` ("checkpoint", "eval", "export", ..).
void fault_signal_at(const char* phase);
// Kills this process when ST_TEST_KILL_IN_SAVE names `step` and this rank writes the last shard.
void fault_kill_in_save(int64_t step, bool last_shard);
// Never returns when ST_TEST_STALL_AT names (rank, step, unit): a hung device or peer.
void fault_stall_before_gather(int rank, int64_t step, size_t unit);
// Sleeps out the rest of ST_TEST_STEP_SECONDS when it paces `step`, which took `took_s` so far.
void fault_pace_step(int64_t step, double took_s);

}  // namespace st
