#pragma once
// Fault plans: which fault fires where and when. Parsed from `--faults SPEC|FILE`:
//
//   explicit  KIND@step=N[,rank=R][,factor=F][,duration=D]  or  KIND@time=30s[,…]   separated by ';'
//   random    random:mtbf=DURATION[,mix=crash:0.5/hang:0.2/straggler:0.2/sdc:0.1][,flaky-ranks=K]
//             [,flaky-share=P][,seed=S]     Poisson arrivals (exponential gaps of mean mtbf) in job time;
//             a share P of them lands on K "flaky" ranks (failures concentrate on bad nodes).
//   file      JSON {"faults": [{"kind": "crash", "step": 15, "rank": 1}, …], "random": {"mtbf": "10m", …}}
//
// A step trigger fires during that step (before it runs); a time trigger fires at the first step that starts
// at or after that many seconds of job time (since the job's first attempt began). Ranks in a plan name
// slots (the rank's original node): a drained rank's replacement no longer receives its faults.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb::resilience {

enum class FaultKind { crash, hang, straggler, sdc, nan, ckpt_corrupt, ckpt_write_fail };

std::string_view to_string(FaultKind kind);
// Throws a usage Error naming `what` and listing the kinds.
FaultKind parse_fault_kind(std::string_view text, std::string_view what = "--faults");
// True for kinds that stop the job (crash, hang, sdc, nan: the job is restarted from a checkpoint).
bool is_fatal(FaultKind kind);

struct PlannedFault {
  int id = 0;  // position in the plan; identity of the fault in the run dir's "fired" record
  FaultKind kind = FaultKind::crash;
  std::optional<std::int64_t> step;  // exactly one of step and time_s
  std::optional<double> time_s;
  int rank = 0;           // slot the fault hits (default 0)
  double factor = 2.0;    // straggler: slowdown factor (> 1)
  double duration_s = 0;  // straggler: how long the slowdown lasts; 0 = until the job ends
  std::string text;       // canonical spec text, e.g. "crash@step=15,rank=1"
};

struct RandomFaultSpec {
  double mtbf_s = 0;
  std::vector<std::pair<FaultKind, double>> mix{{FaultKind::crash, 1.0}};
  int flaky_ranks = 0;
  double flaky_share = 0;
  std::uint64_t seed = 42;
};

struct FaultPlan {
  std::vector<PlannedFault> faults;
  std::optional<RandomFaultSpec> random;  // what the random part was expanded from
  std::string source;                     // the spec text or the file name
  nlohmann::json to_json() const;
};

// Parses a spec string. `slots` bounds ranks (rank must be < world size + spares: pass the number of slots;
// the last `spares` of them are the spares). Random specs expand up to `horizon_s` of job time (at most
// 100000 faults); `default_seed` is used when the spec names none. Errors are usage Errors that quote the
// bad part.
FaultPlan parse_fault_spec(std::string_view spec, int slots, double horizon_s = 7 * 86400.0,
                           std::uint64_t default_seed = 42, int spares = 0);
// The JSON file form (errors name the file and the JSON path).
FaultPlan parse_fault_json(const nlohmann::json& j, const std::string& source, int slots,
                           double horizon_s = 7 * 86400.0, std::uint64_t default_seed = 42, int spares = 0);
// `--faults SPEC|FILE`: a spec when it contains '@' or starts with "random:", else a JSON file.
FaultPlan load_fault_plan(std::string_view arg, int slots, double horizon_s = 7 * 86400.0,
                          std::uint64_t default_seed = 42, int spares = 0);

// The random part: Poisson arrivals over [0, horizon_s) of job time, deterministic for a seed. `mtbf` is the
// mean time between faults of the job's `slots - spares` ranks; the flaky ranks are drawn from those (never
// from the spares) and take `flaky_share` of that rate. Spares are ordinary slots: each gets the per-slot
// rate of the non-flaky ranks, in addition (without spares the plan is exactly the job's rate).
std::vector<PlannedFault> expand_random_faults(const RandomFaultSpec& spec, int slots, double horizon_s,
                                               int first_id = 0, int spares = 0);

// Which planned faults already fired, persisted in the run dir (one line per fault, fsync'ed before the
// fault acts), so a fault fires once even when its step is run again after a restart.
class FiredRecord {
 public:
  explicit FiredRecord(std::filesystem::path path);  // reads the existing record
  bool fired(const PlannedFault& fault) const;
  void mark(const PlannedFault& fault);  // durable before it returns
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::set<std::string> keys_;
};

}  // namespace fb::resilience
