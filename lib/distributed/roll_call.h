// Who still answers when a collective hangs. The watchdog thread of every rank that has waited
// long in a collective answers pings on a private duplicate of the world; the rank whose
// collective timed out pings every other rank and names those that stay silent: "ranks 2-3 on
// st-n2 stopped answering". A dead process, a host whose link is down or that lost power, and a
// rank stuck outside any collective all look the same here: no answer in time.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace st {

class RollCall {
 public:
  // Collective over `world` (duplicates it). `hostnames[r]` is rank r's host.
  RollCall(MPI_Comm world, std::vector<std::string> hostnames);
  ~RollCall();
  RollCall(const RollCall&) = delete;
  RollCall& operator=(const RollCall&) = delete;

  // Answers the pings that arrived. One thread only (the watchdog's), as for silent_ranks.
  void answer_pings();
  // Pings every other rank, answering pings meanwhile, and returns those that did not answer
  // within `wait_s`, in rank order.
  std::vector<int> silent_ranks(double wait_s);
  // "ranks 2-3 on st-n2 stopped answering (...)" / "every rank still answers, ...".
  std::string describe(const std::vector<int>& silent) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int round_ = 0;
  std::vector<std::string> hostnames_;
  std::vector<int> answer_of_;        // per peer: the round its answer carried
  std::vector<int> answered_round_;   // per peer: the round we answered (send buffer)
  std::vector<MPI_Request> answers_in_flight_;
};

}  // namespace st
