// Pings and answers are one int (the round) on their own tags of a duplicated communicator, so
// they never match the job's messages; errors come back as codes (a dead peer is just silent).
#include "distributed/roll_call.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "distributed/env_check.h"
#include "util/check.h"

namespace st {
namespace {

constexpr int kPingTag = 1;
constexpr int kAnswerTag = 2;

}  // namespace

RollCall::RollCall(MPI_Comm world, std::vector<std::string> hostnames) : hostnames_(std::move(hostnames)) {
  ST_CHECK_MPI(MPI_Comm_dup(world, &comm_));
  ST_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  ST_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  ST_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  answer_of_.assign(static_cast<size_t>(size_), 0);
  answered_round_.assign(static_cast<size_t>(size_), 0);
}

RollCall::~RollCall() {
  for (MPI_Request& request : answers_in_flight_) MPI_Request_free(&request);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void RollCall::answer_pings() {
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, comm_, &arrived, &status) != MPI_SUCCESS || !arrived) break;
    int round = 0;
    if (MPI_Recv(&round, 1, MPI_INT, status.MPI_SOURCE, kPingTag, comm_, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
    // The send buffer is a member: it outlives the send. A peer pings again only after the
    // answer to its last ping arrived or it gave up on it, so one slot per peer is enough.
    int& answer = answered_round_[static_cast<size_t>(status.MPI_SOURCE)];
    answer = round;
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Isend(&answer, 1, MPI_INT, status.MPI_SOURCE, kAnswerTag, comm_, &request) == MPI_SUCCESS) {
      answers_in_flight_.push_back(request);
    }
  }
  // Forget answers that went out.
  answers_in_flight_.erase(std::remove_if(answers_in_flight_.begin(), answers_in_flight_.end(),
                                          [](MPI_Request& request) {
                                            int done = 0;
                                            return MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done;
                                          }),
                           answers_in_flight_.end());
}

std::vector<int> RollCall::silent_ranks(double wait_s) {
  const int round = ++round_;
  // Members, not locals: a late answer still lands in them after this returns.
  std::vector<int>& answers = answer_of_;
  std::fill(answers.begin(), answers.end(), -1);
  std::vector<MPI_Request> receives(static_cast<size_t>(size_), MPI_REQUEST_NULL);
  std::vector<MPI_Request> pings(static_cast<size_t>(size_), MPI_REQUEST_NULL);
  std::vector<bool> answered(static_cast<size_t>(size_), false);
  answered[static_cast<size_t>(rank_)] = true;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Irecv(&answers[static_cast<size_t>(peer)], 1, MPI_INT, peer, kAnswerTag, comm_, &receives[static_cast<size_t>(peer)]);
    MPI_Isend(&round_, 1, MPI_INT, peer, kPingTag, comm_, &pings[static_cast<size_t>(peer)]);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  for (;;) {
    answer_pings();
    bool all = true;
    for (int peer = 0; peer < size_; ++peer) {
      auto& request = receives[static_cast<size_t>(peer)];
      if (answered[static_cast<size_t>(peer)]) continue;
      int done = 0;
      if (request != MPI_REQUEST_NULL && MPI_Test(&request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done &&
          answers[static_cast<size_t>(peer)] == round) {
        answered[static_cast<size_t>(peer)] = true;
      } else {
        all = false;
      }
    }
    if (all || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::vector<int> silent;
  for (int peer = 0; peer < size_; ++peer) {
    if (answered[static_cast<size_t>(peer)]) continue;
    silent.push_back(peer);
    // A silent peer's requests never complete; the job is about to end, so they are dropped.
    if (receives[static_cast<size_t>(peer)] != MPI_REQUEST_NULL) MPI_Request_free(&receives[static_cast<size_t>(peer)]);
  }
  for (MPI_Request& ping : pings) {
    if (ping != MPI_REQUEST_NULL) MPI_Request_free(&ping);
  }
  return silent;
}

std::string RollCall::describe(const std::vector<int>& silent) const {
  if (silent.empty()) {
    return "every rank still answers, each waiting in a collective: one of them skipped this one";
  }
  std::map<std::string, std::vector<int>> by_host;
  std::vector<std::string> hosts;  // in the order of their first silent rank
  for (int rank : silent) {
    const std::string& host = hostnames_[static_cast<size_t>(rank)];
    if (!by_host.count(host)) hosts.push_back(host);
    by_host[host].push_back(rank);
  }
  std::string text;
  for (const auto& host : hosts) {
    const auto& ranks = by_host[host];
    text += (text.empty() ? "" : ", ") + std::string(ranks.size() > 1 ? "ranks " : "rank ") +
            format_rank_list(ranks) + " on " + host;
  }
  return text + " stopped answering (dead, cut off, or busy outside any collective)";
}

}  // namespace st
