#pragma once
// Faults injected into the communication engine, so that `locate` and `burnin` can be tested on one machine
// (issue 17): a slow link between two ranks, a slow rank, a rank that never enters call #k, a flipped bit in
// one rank's GEMM result. Read once from the environment variable FACTORYBENCH_INJECT:
//
//   slow-link@ranks=A-B,delay=20ms   every message between world ranks A and B waits `delay` first
//   slow-rank@rank=R,delay=20ms      every message rank R sends, and every collective it enters, waits first
//   hang@rank=R,call=K               rank R never enters its communication call #K (sequence numbers from 1)
//   sdc@rank=R[,check=N]             rank R flips one bit of its burn-in result at SDC check N (default 1)
//   wrong@rank=R[,check=N]           rank R reads one wrong element back from its Nth collective --check
//
// several separated by ';' (one slow-rank, hang, sdc and wrong entry each; any number of slow links). Ranks
// are world ranks, checked against the job (check_injected_ranks). The delay is a sleep, not a busy loop, so
// an oversubscribed CI machine still shows it as a slow link rather than as general noise.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fb {

struct InjectedFaults {
  struct SlowLink {
    int a = 0, b = 0;
    double delay_s = 0;
  };
  std::vector<SlowLink> slow_links;
  int slow_rank = -1;
  double slow_rank_delay_s = 0;
  int hang_rank = -1;
  std::uint64_t hang_call = 0;
  int sdc_rank = -1;
  std::uint64_t sdc_check = 1;
  int wrong_rank = -1;
  std::uint64_t wrong_check = 1;
  std::string text;  // the spec as given

  bool empty() const { return text.empty(); }
  // Seconds world rank `from` waits before a message to world rank `to`.
  double send_delay(int from, int to) const;
  // Seconds world rank `rank` waits before entering a collective.
  double collective_delay(int rank) const;
  // True when `rank` must never enter its call number `call`.
  bool hangs_at(int rank, std::uint64_t call) const { return rank == hang_rank && call == hang_call; }
};

// Throws a usage Error naming FACTORYBENCH_INJECT and what is wrong.
InjectedFaults parse_injected_faults(std::string_view spec);
// Throws a usage Error when an entry names a rank outside the job (a typo would otherwise test nothing).
void check_injected_ranks(const InjectedFaults& faults, int world_size);
// A hang is found through the ranks waiting for the stuck one: refused (usage Error) in a one-rank job.
void check_hang_has_peers(const InjectedFaults& f, int world_size);
// What a command's run gives the injected faults to act on.
struct InjectionTargets {
  bool communicator = false;   // slow-link, slow-rank and hang: traffic through the communicator
  bool point_to_point = true;  // with `communicator`: messages between ranks (a slow link acts only on those)
  bool numbered_calls =
      false;         // hang alone: numbered calls outside the communicator (burnin's check gathers)
  bool sdc = false;  // a burn-in check
  bool collective_check = false;  // wrong: a collective --check
};
// Parses FACTORYBENCH_INJECT and checks it against the job and what `command` can apply (`can`). Throws a
// usage Error otherwise: an injection that cannot act tests nothing.
void check_injection_applies(std::string_view command, int world_size, const InjectionTargets& can);
// FACTORYBENCH_INJECT, parsed on first use (empty when unset).
const InjectedFaults& injected_faults();

}  // namespace fb
