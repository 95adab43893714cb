// The checkpoint store on real files: write/commit/verify/restore, corruption and incomplete checkpoints
// skipped with reasons, injected ENOSPC, pruning (--keep counts verified checkpoints only: issue 16), the
// walk-back below a failed step, commits refused for missing shards, async writes, the pause hook's syntax,
// and a writer process killed with SIGKILL at several offsets mid-write: the next resume always finds a
// verified checkpoint.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/random_fill.hpp"
#include "resilience/checkpoint_store.hpp"
#include "resilience/checkpoint_test_hook.hpp"

namespace fb::resilience {
namespace {
namespace fs = std::filesystem;

std::vector<std::byte> state_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> out(n);
  SplitMix64 rng(seed);
  for (auto& b : out) b = static_cast<std::byte>(rng.next() & 0xff);
  return out;
}

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("fb_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root);
  }
  void TearDown() override { fs::remove_all(root); }
  // A full checkpoint of `ranks` shards of `bytes` each; shard r holds state_bytes(bytes, step*100+r).
  CheckpointInfo save(const CheckpointStore& store, std::int64_t step, int ranks, std::size_t bytes) {
    std::vector<ShardInfo> shards;
    for (int r = 0; r < ranks; ++r)
      shards.push_back(
          store.write_shard(step, r, state_bytes(bytes, static_cast<std::uint64_t>(step * 100 + r))));
    return store.commit(step, shards);
  }
  // Flips 8 bytes in the middle of one shard, as the ckpt-corrupt fault does.
  void corrupt(const CheckpointStore& store, std::int64_t step, int rank) {
    std::fstream f(store.dir_for(step) / CheckpointStore::shard_file(rank),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const auto middle = f.tellg() / 2;
    char bytes[8];
    f.seekg(middle);
    f.read(bytes, sizeof bytes);
    for (auto& b : bytes) b = static_cast<char>(b ^ 0xA5);
    f.seekp(middle);
    f.write(bytes, sizeof bytes);
  }
  fs::path root;
};

TEST_F(CheckpointStoreTest, SaveVerifyAndRestoreRoundTrip) {
  CheckpointStore store(root / "checkpoints");
  const auto info = save(store, 10, 3, 100000);
  EXPECT_EQ(info.name, "step-00000010");
  EXPECT_EQ(info.total_bytes, 300000u);
  EXPECT_TRUE(fs::exists(root / "checkpoints/step-00000010/manifest.json"));
  EXPECT_TRUE(fs::exists(root / "checkpoints/step-00000010/rank-00002.shard"));
  const auto choice = store.find_newest_valid(3);
  ASSERT_TRUE(choice.chosen);
  EXPECT_EQ(choice.chosen->step, 10);
  EXPECT_TRUE(choice.skipped.empty());
  std::vector<std::byte> back(100000);
  store.read_shard(*choice.chosen, 1, back);
  EXPECT_EQ(back, state_bytes(100000, 1001));
  EXPECT_EQ(choice.chosen->shards[1].xxh64, checksum64(back));
}

// Step 100000000 is named with nine digits: it is listed, chosen on resume and pruned like the others (it was
// committed but invisible, so a resume went back to step 99999998 and the directories were never removed).
// The manifest-only check a restoring rank makes sees the same checkpoint.
TEST_F(CheckpointStoreTest, StepsPastEightDigitsAreListedAndChosen) {
  CheckpointStore store(root);
  save(store, 99999998, 2, 4096);
  const auto big = save(store, 100000000, 2, 4096);
  EXPECT_EQ(big.name, "step-100000000");
  fs::create_directories(root / "step-000000012");  // another spelling of step 12: not a checkpoint
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{99999998, 100000000}));
  const auto choice = store.find_newest_valid(2);
  ASSERT_TRUE(choice.chosen);
  EXPECT_EQ(choice.chosen->step, 100000000);
  std::string why;
  ASSERT_TRUE(store.verify_manifest(100000000, 2, &why)) << why;
  EXPECT_FALSE(store.verify_manifest(100000000, 3, &why));
  EXPECT_EQ(why, "written by 2 ranks, this job has 3");
  save(store, 100000002, 2, 4096);
  EXPECT_EQ(store.prune(1, 2, 100000002), (std::vector<std::string>{"step-99999998"}));
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{100000000, 100000002}));
}

TEST_F(CheckpointStoreTest, CorruptAndIncompleteCheckpointsAreSkippedWithReasons) {
  CheckpointStore store(root);
  save(store, 10, 2, 4096);
  save(store, 20, 2, 4096);
  save(store, 30, 2, 4096);
  // 40: shards written, never committed (the job died before the manifest).
  store.write_shard(40, 0, state_bytes(4096, 1));
  // 30: a bit flipped in a committed shard.
  {
    std::fstream f(root / "step-00000030/rank-00001.shard", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x10);
    f.seekp(1000);
    f.write(&c, 1);
  }
  // 20: a shard truncated.
  fs::resize_file(root / "step-00000020/rank-00000.shard", 100);
  const auto choice = store.find_newest_valid(2);
  ASSERT_TRUE(choice.chosen);
  EXPECT_EQ(choice.chosen->step, 10);
  ASSERT_EQ(choice.skipped.size(), 3u);
  EXPECT_EQ(choice.skipped[0].checkpoint, "step-00000040");
  EXPECT_EQ(choice.skipped[0].reason, "incomplete: no manifest (the writers stopped before the commit)");
  EXPECT_EQ(choice.skipped[1].checkpoint, "step-00000030");
  EXPECT_NE(choice.skipped[1].reason.find("shard rank-00001.shard checksum mismatch"), std::string::npos)
      << choice.skipped[1].reason;
  EXPECT_EQ(choice.skipped[2].reason, "shard rank-00000.shard has 100 bytes, the manifest says 4096");
  // Another world size never resumes from these.
  const auto other = store.find_newest_valid(4);
  EXPECT_FALSE(other.chosen);
  EXPECT_EQ(other.skipped.back().reason, "written by 2 ranks, this job has 4");
}

TEST_F(CheckpointStoreTest, TamperedManifestIsRejected) {
  CheckpointStore store(root);
  save(store, 5, 1, 1024);
  const auto path = root / "step-00000005/manifest.json";
  auto text = read_text_file(path);
  text.replace(text.find("\"bytes\": 1024"), 13, "\"bytes\": 1023");
  std::ofstream(path) << text;
  std::string reason;
  EXPECT_FALSE(store.verify(5, 1, &reason));
  EXPECT_EQ(reason, "manifest checksum mismatch");
}

TEST_F(CheckpointStoreTest, InjectedDiskFullLeavesThePreviousCheckpointNewest) {
  CheckpointStore store(root);
  save(store, 10, 2, 1 << 20);
  store.write_shard(20, 0, state_bytes(1 << 20, 7));
  ShardWriteOptions full;
  full.fail_after_bytes = 300000;
  try {
    store.write_shard(20, 1, state_bytes(1 << 20, 8), full);
    FAIL() << "expected a write failure";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(root / "step-00000020/.rank-00001.shard.tmp"));
  const auto choice = store.find_newest_valid(2);
  ASSERT_TRUE(choice.chosen);
  EXPECT_EQ(choice.chosen->step, 10);
}

TEST_F(CheckpointStoreTest, PruneKeepsTheNewestVerifiedBesideTheNewCommit) {
  CheckpointStore store(root);
  for (int s = 1; s <= 5; ++s) save(store, s * 10, 1, 512);
  store.write_shard(25, 0, state_bytes(512, 3));  // leftover of a crashed save
  store.write_shard(60, 0, state_bytes(512, 3));  // newer than the newest commit: may be in progress, kept
  const auto removed = store.prune(2, 1, 50);     // 40 and 30 verify; 50, just committed, does not count
  EXPECT_EQ(removed, (std::vector<std::string>{"step-00000010", "step-00000020", "step-00000025"}));
  EXPECT_EQ(store.committed_steps(), (std::vector<std::int64_t>{30, 40, 50}));
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{30, 40, 50, 60}));
}

// A directory that cannot be removed is not reported as pruned but as failed, with the reason: its space
// stays in use. Root cannot be refused by permissions, so an immutable file (chattr +i) stands in there.
TEST_F(CheckpointStoreTest, PruneReportsADirectoryItCannotRemove) {
  CheckpointStore store(root);
  for (int s = 1; s <= 4; ++s) save(store, s * 10, 1, 512);
  const auto shard = store.dir_for(10) / CheckpointStore::shard_file(0);
  const auto step_dir = store.dir_for(10).string();
  const bool as_root = ::geteuid() == 0;
  const std::string lock =
      as_root ? "chattr +i '" + shard.string() + "' 2>/dev/null" : "chmod a-w '" + step_dir + "'";
  const std::string unlock =
      as_root ? "chattr -i '" + shard.string() + "' 2>/dev/null" : "chmod u+w '" + step_dir + "'";
  if (std::system(lock.c_str()) != 0) GTEST_SKIP() << "chattr +i is not supported here";
  std::vector<std::string> failed;
  const auto removed = store.prune(2, 1, 40, &failed);  // 30 and 20 verify; 10 should go
  EXPECT_EQ(std::system(unlock.c_str()), 0);
  EXPECT_TRUE(removed.empty());
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].rfind("step-00000010: ", 0), 0u) << failed[0];
  EXPECT_TRUE(failed[0].find("not permitted") != std::string::npos ||
              failed[0].find("Permission denied") != std::string::npos)
      << failed[0];
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{10, 20, 30, 40}));
  const auto choice = store.find_newest_valid(1);
  ASSERT_TRUE(choice.chosen);
  EXPECT_EQ(choice.chosen->step, 40);
  // Once it can go, the next prune removes it.
  EXPECT_EQ(store.prune(2, 1, 40), (std::vector<std::string>{"step-00000010"}));
}

// Every way the steps present, the verified ones among them and --keep can combine (6 steps, keep 1..3):
// nothing is removed while fewer than `keep` verify, the `keep` newest verified are never removed (so the
// newest verified never is), and nothing newer than the oldest kept one is removed.
TEST(StepsToPrune, KeepsTheNewestVerifiedInEveryCombination) {
  const std::vector<std::int64_t> all{5, 10, 15, 20, 25, 30};
  for (unsigned present_mask = 0; present_mask < 64; ++present_mask)
    for (unsigned verified_mask = present_mask;; verified_mask = (verified_mask - 1) & present_mask) {
      std::vector<std::int64_t> present, verified;
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (present_mask >> i & 1) present.push_back(all[i]);
        if (verified_mask >> i & 1) verified.push_back(all[i]);
      }
      for (int keep = 1; keep <= 3; ++keep) {
        SCOPED_TRACE(::testing::Message()
                     << "present " << present_mask << " verified " << verified_mask << " keep " << keep);
        const auto removed = steps_to_prune(present, verified, keep);
        const auto gone = [&](std::int64_t s) { return std::count(removed.begin(), removed.end(), s) > 0; };
        for (const auto s : removed) EXPECT_TRUE(std::count(present.begin(), present.end(), s) == 1);
        if (static_cast<int>(verified.size()) < keep) {
          EXPECT_TRUE(removed.empty());
          continue;
        }
        const auto kept_from = verified.end() - keep;
        for (auto it = kept_from; it != verified.end(); ++it) EXPECT_FALSE(gone(*it));
        for (const auto s : present) EXPECT_EQ(gone(s), s < *kept_from) << "step " << s;
      }
      if (verified_mask == 0) break;
    }
}

// The H200 sequence of issue 16 on the store alone: 10 damaged after its commit (the ckpt-corrupt fault
// fired while 15 was in flight), then 15 committed. Pruning to 2 must keep 5 (10 does not count), so when
// 15 is damaged too the restore still has 5 to walk back to.
TEST_F(CheckpointStoreTest, PruneCountsOnlyVerifiedCheckpoints) {
  CheckpointStore store(root);
  save(store, 5, 2, 4096);
  save(store, 10, 2, 4096);
  corrupt(store, 10, 0);
  save(store, 15, 2, 4096);
  EXPECT_TRUE(store.prune(2, 2, 15).empty());  // as the training job calls it, right after committing 15
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{5, 10, 15}));
  corrupt(store, 15, 1);
  auto choice = store.find_newest_valid(2);
  ASSERT_TRUE(choice.chosen);
  EXPECT_EQ(choice.chosen->step, 5);
  ASSERT_EQ(choice.skipped.size(), 2u);
  EXPECT_NE(choice.skipped[0].reason.find("rank-00001.shard checksum mismatch"), std::string::npos);
  EXPECT_NE(choice.skipped[1].reason.find("rank-00000.shard checksum mismatch"), std::string::npos);
  // Once 20 verifies, 15 and 10 (damaged) sit between the kept 5 and 20: only older ones may go.
  save(store, 20, 2, 4096);
  EXPECT_TRUE(store.prune(2, 2, 20).empty());
  save(store, 25, 2, 4096);
  EXPECT_TRUE(store.prune(2, 2, 25).empty());  // 20 and 5 are the two kept
  save(store, 30, 2, 4096);
  EXPECT_EQ(store.prune(2, 2, 30),
            (std::vector<std::string>{"step-00000005", "step-00000010", "step-00000015"}));
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{20, 25, 30}));
}

// After a walk-back (restored 5; 15 and 20 damaged), the re-run's commit of 10 must not be pruned in favour
// of the newer damaged ones, as a prune by step number over manifests did.
TEST_F(CheckpointStoreTest, PruneAfterAWalkBackKeepsTheNewCommit) {
  CheckpointStore store(root);
  for (const std::int64_t s : {5, 15, 20}) save(store, s, 1, 2048);
  corrupt(store, 15, 0);
  corrupt(store, 20, 0);
  save(store, 10, 1, 2048);
  EXPECT_TRUE(store.prune(2, 1, 10).empty());
  const auto choice = store.find_newest_valid(1);
  ASSERT_TRUE(choice.chosen);
  EXPECT_EQ(choice.chosen->step, 10);
  save(store, 15, 1, 2048);  // the re-run overwrites the damaged 15; 10 and 5 are the two kept
  EXPECT_TRUE(store.prune(2, 1, 15).empty());
  save(store, 20, 1, 2048);  // and the damaged 20; now 5 may go
  EXPECT_EQ(store.prune(2, 1, 20), (std::vector<std::string>{"step-00000005"}));
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{10, 15, 20}));
}

// A run started afresh in an old run dir, or resumed from scratch because the newer checkpoints do not fit
// its state: the newer directories are another run's. They must not count toward --keep, or every commit of
// this run would be pruned in favour of them (each commit removed itself), and they are not removed either.
TEST_F(CheckpointStoreTest, NewerCheckpointsOfAnotherRunNeitherCountNorGo) {
  CheckpointStore store(root);
  for (const std::int64_t s : {90, 120}) save(store, s, 2, 1024);  // the earlier run's, both verify
  save(store, 30, 2, 1024);
  EXPECT_TRUE(store.prune(2, 2, 30).empty());
  save(store, 60, 2, 1024);
  EXPECT_TRUE(store.prune(2, 2, 60).empty());
  save(store, 75, 2, 1024);
  EXPECT_TRUE(store.prune(2, 2, 75).empty());  // 60 and 30 kept beside 75
  save(store, 80, 2, 1024);
  EXPECT_EQ(store.prune(2, 2, 80), (std::vector<std::string>{"step-00000030"}));
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{60, 75, 80, 90, 120}));
}

TEST_F(CheckpointStoreTest, PruneWithFewerVerifiedThanKeepRemovesNothing) {
  CheckpointStore store(root);
  for (const std::int64_t s : {10, 20, 30}) save(store, s, 1, 1024);
  corrupt(store, 20, 0);
  corrupt(store, 30, 0);
  store.write_shard(5, 0, state_bytes(1024, 1));  // an uncommitted leftover, older than every checkpoint
  EXPECT_TRUE(store.prune(2, 1, 30).empty());
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{5, 10, 20, 30}));
  // A checkpoint written by another world size does not verify for this one and does not count either.
  EXPECT_TRUE(store.prune(1, 3, 30).empty());
}

// verify remembers the hashes of unchanged shards (prune re-checks kept checkpoints at every commit), but
// a write in place after that, even the next instant, is still found.
TEST_F(CheckpointStoreTest, RememberedHashesNeverHideALaterCorruption) {
  CheckpointStore store(root);
  save(store, 10, 2, 1 << 16);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // older than the file-time granularity rule
  ASSERT_TRUE(store.verify(10, 2, nullptr));
  ASSERT_TRUE(store.verify(10, 2, nullptr));  // from the remembered hashes
  corrupt(store, 10, 1);
  std::string why;
  EXPECT_FALSE(store.verify(10, 2, &why));
  EXPECT_NE(why.find("rank-00001.shard checksum mismatch"), std::string::npos) << why;
  // Replaced by a rename (a re-run of the step writes a new shard): read again, verifies again.
  store.write_shard(10, 1, state_bytes(1 << 16, 1001));
  EXPECT_TRUE(store.verify(10, 2, nullptr));
}

// The checkpoint just committed does not count: a shard damaged between its write and the commit (the
// writers' hashes are of what they wrote) must not cost the last good checkpoint, even with --keep 1.
TEST_F(CheckpointStoreTest, TheJustCommittedCheckpointDoesNotCount) {
  CheckpointStore store(root);
  for (const std::int64_t s : {10, 20}) save(store, s, 2, 2048);
  std::vector<ShardInfo> shards{store.write_shard(30, 0, state_bytes(2048, 3000)),
                                store.write_shard(30, 1, state_bytes(2048, 3001))};
  corrupt(store, 30, 1);  // after the write, before the commit
  store.commit(30, shards);
  EXPECT_EQ(store.prune(1, 2, 30), (std::vector<std::string>{"step-00000010"}));  // 20 is the one kept
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{20, 30}));
  save(store, 40, 2, 2048);
  EXPECT_TRUE(store.prune(1, 2, 40).empty());  // 30 is read now and fails: 20 stays the one verified
  const auto choice = store.find_newest_valid(2, 40);
  ASSERT_TRUE(choice.chosen);
  EXPECT_EQ(choice.chosen->step, 20);
  save(store, 50, 2, 2048);
  EXPECT_EQ(store.prune(1, 2, 50), (std::vector<std::string>{"step-00000020", "step-00000030"}));
  // A shard missing from the one just committed changes nothing either.
  save(store, 60, 2, 2048);
  fs::remove(store.dir_for(60) / CheckpointStore::shard_file(1));
  EXPECT_EQ(store.prune(1, 2, 60), (std::vector<std::string>{"step-00000040"}));
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{50, 60}));
}

// A step directory that is a link (another run's checkpoint linked in): the prune removes the link, and the
// checkpoint it names keeps its manifest.
TEST_F(CheckpointStoreTest, PruneRemovesALinkedStepDirectoryNotWhatItNames) {
  const auto elsewhere = root / "other-run";
  CheckpointStore other(elsewhere);
  save(other, 5, 1, 1024);
  CheckpointStore store(root / "run");
  fs::create_directories(store.root());
  fs::create_directory_symlink(other.dir_for(5), store.dir_for(5));
  for (const std::int64_t s : {10, 20}) save(store, s, 1, 1024);
  EXPECT_EQ(store.prune(1, 1, 20), (std::vector<std::string>{"step-00000005"}));
  EXPECT_FALSE(fs::exists(fs::symlink_status(store.dir_for(5))));
  EXPECT_TRUE(fs::exists(other.dir_for(5) / "manifest.json"));
  EXPECT_TRUE(other.verify(5, 1, nullptr));
}

// Leftovers at the names a save writes are replaced, not written through: a manifest.json that links to an
// older checkpoint's manifest (the commit overwrote it, so the checkpoint a run resumed from stopped
// verifying), a FIFO where the manifest goes (the commit blocked), a link where a shard's temporary file
// goes.
TEST_F(CheckpointStoreTest, SaveReplacesLinksAndFifosLeftAtItsNames) {
  CheckpointStore store(root);
  save(store, 10, 2, 4096);
  fs::create_directories(store.dir_for(12));
  fs::create_symlink("../step-00000010/manifest.json", store.dir_for(12) / "manifest.json");
  fs::create_symlink("../step-00000010/rank-00000.shard", store.dir_for(12) / ".rank-00000.shard.tmp");
  save(store, 12, 2, 4096);
  std::string why;
  EXPECT_TRUE(store.verify(10, 2, &why)) << why;
  EXPECT_TRUE(store.verify(12, 2, &why)) << why;
  EXPECT_FALSE(fs::is_symlink(store.dir_for(12) / "manifest.json"));
  fs::create_directories(store.dir_for(14));
  ASSERT_EQ(::mkfifo((store.dir_for(14) / "manifest.json").c_str(), 0644), 0);
  save(store, 14, 2, 4096);  // returns: a FIFO opened for writing would block until a reader came
  EXPECT_TRUE(store.verify(14, 2, &why)) << why;
  EXPECT_TRUE(store.verify(10, 2, &why)) << why;
}

// A link at the step's own name (step 6 naming step 4, as a copied run dir or a hand repair leaves it): the
// save of step 6 makes a directory of its own. Written through, its shards and manifest replaced step 4's,
// the checkpoint the run had resumed from.
TEST_F(CheckpointStoreTest, SaveReplacesALinkAtTheStepsOwnName) {
  CheckpointStore store(root);
  save(store, 4, 2, 4096);
  fs::create_directory_symlink("step-00000004", store.dir_for(6));
  save(store, 6, 2, 4096);
  EXPECT_FALSE(fs::is_symlink(store.dir_for(6)));
  std::string why;
  EXPECT_TRUE(store.verify(4, 2, &why)) << why;
  EXPECT_TRUE(store.verify(6, 2, &why)) << why;
}

// The job's retention: each rank checks its own shard (verify_rank), the ranks agree, and rank 0 removes with
// prune_verified. Damage to rank 1's shard is seen by rank 1's check only; a step the ranks did not agree on
// is not counted, so the older verified one stays.
TEST_F(CheckpointStoreTest, EachRankVerifiesItsOwnShardAndPruneTakesTheAgreedSteps) {
  CheckpointStore store(root);
  for (const std::int64_t step : {10, 20, 30, 40}) save(store, step, 2, 4096);
  corrupt(store, 30, 1);
  std::string why;
  EXPECT_TRUE(store.verify_rank(30, 2, 0, &why)) << why;
  EXPECT_FALSE(store.verify_rank(30, 2, 1, &why));
  EXPECT_EQ(why.rfind("shard rank-00001.shard checksum mismatch (xxh64 ", 0), 0u) << why;
  EXPECT_FALSE(store.verify_rank(30, 3, 0, &why));  // another world size
  EXPECT_EQ(why, "written by 2 ranks, this job has 3");
  EXPECT_FALSE(store.verify_rank(50, 2, 0, &why));  // no such step
  // Agreed at the commit of 40 with --keep 2: 20 and 10 verify on both ranks, 30 on rank 0 only.
  EXPECT_EQ(store.prune_verified(2, 40, {10, 20}), std::vector<std::string>{});
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(store.prune_verified(1, 40, {20}), (std::vector<std::string>{"step-00000010"}));
  EXPECT_EQ(store.list_steps(), (std::vector<std::int64_t>{20, 30, 40}));
}

TEST_F(CheckpointStoreTest, WalkBackBelowAStepThatFailedElsewhere) {
  CheckpointStore store(root);
  for (const std::int64_t s : {10, 20, 30}) save(store, s, 2, 1024);
  const auto choice = store.find_newest_valid(2, 30);
  ASSERT_TRUE(choice.chosen);
  EXPECT_EQ(choice.chosen->step, 20);
  EXPECT_TRUE(choice.skipped.empty());
  EXPECT_FALSE(store.find_newest_valid(2, 10).chosen);
}

TEST_F(CheckpointStoreTest, CommitRefusesAMissingShard) {
  CheckpointStore store(root);
  std::vector<ShardInfo> shards{store.write_shard(10, 0, state_bytes(1024, 1)),
                                store.write_shard(10, 1, state_bytes(1024, 2))};
  fs::remove(store.dir_for(10) / CheckpointStore::shard_file(1));
  try {
    store.commit(10, shards);
    FAIL() << "expected the commit to be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard rank-00001.shard is missing"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(store.dir_for(10) / "manifest.json"));
  shards[1].bytes = 1000;  // wrong size listed
  store.write_shard(10, 1, state_bytes(1024, 2));
  EXPECT_THROW(store.commit(10, shards), Error);
  EXPECT_TRUE(store.committed_steps().empty());
}

TEST(CheckpointPauses, ParsesPhasesSecondsAndSteps) {
  const auto p = parse_checkpoint_pauses("shard=1.5, manifest=2@20,prune=0,restore=3@0");
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].phase, CheckpointPhase::shard);
  EXPECT_DOUBLE_EQ(p[0].seconds, 1.5);
  EXPECT_EQ(p[0].step, -1);
  EXPECT_EQ(p[1].phase, CheckpointPhase::manifest);
  EXPECT_EQ(p[1].step, 20);
  EXPECT_EQ(p[2].phase, CheckpointPhase::prune);
  EXPECT_EQ(p[3].phase, CheckpointPhase::restore);
  EXPECT_EQ(p[3].step, 0);
  EXPECT_TRUE(parse_checkpoint_pauses("").empty());
  for (const char* bad : {"shard", "write=1", "shard=x", "shard=-1", "shard=1@", "shard=1@-2", "shard=1e9"}) {
    try {
      parse_checkpoint_pauses(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
      EXPECT_NE(std::string(e.what()).find("FACTORYBENCH_TEST_CKPT_PAUSE"), std::string::npos) << e.what();
    }
  }
}

TEST_F(CheckpointStoreTest, AsyncWriterWritesFromItsOwnCopy) {
  CheckpointStore store(root);
  AsyncShardWriter writer;
  EXPECT_FALSE(writer.pending());
  auto data = state_bytes(3 << 20, 11);
  const auto expected = checksum64(data);
  writer.start(store, 7, 0, data);
  std::fill(data.begin(), data.end(), std::byte{0});  // training moves on; the snapshot is the writer's
  EXPECT_TRUE(writer.pending());
  const auto info = writer.wait();
  EXPECT_EQ(info.xxh64, expected);
  store.commit(7, {info});
  std::string reason;
  EXPECT_TRUE(store.verify(7, 1, &reason)) << reason;
}

// The async path reuses one host buffer: moved into the writer, handed back after the write (same memory,
// no copy), and an injected write failure still gives it back.
TEST_F(CheckpointStoreTest, AsyncWriterHandsItsBufferBackForTheNextSnapshot) {
  CheckpointStore store(root);
  AsyncShardWriter writer;
  EXPECT_TRUE(writer.take_buffer().empty());
  auto buffer = state_bytes(2 << 20, 5);
  const auto* memory = buffer.data();
  const auto first = checksum64(buffer);
  writer.start(store, 1, 0, std::move(buffer));
  EXPECT_THROW(writer.start(store, 2, 0, state_bytes(16, 1)), Error);  // one write in flight at a time
  EXPECT_EQ(writer.wait().xxh64, first);
  buffer = writer.take_buffer();
  EXPECT_EQ(buffer.data(), memory);
  EXPECT_FALSE(writer.pending());
  buffer[0] = std::byte{0x5a};  // the next snapshot, into the same buffer
  const auto second = checksum64(buffer);
  ShardWriteOptions fail;
  fail.fail_after_bytes = 4096;
  writer.start(store, 2, 0, std::move(buffer), fail);
  EXPECT_THROW(writer.wait(), Error);
  buffer = writer.take_buffer();
  ASSERT_EQ(buffer.size(), 2u << 20);
  EXPECT_EQ(checksum64(buffer), second);
  writer.start(store, 3, 0, std::move(buffer));
  store.commit(3, {writer.wait()});
  std::string reason;
  EXPECT_TRUE(store.verify(3, 1, &reason)) << reason;
  EXPECT_FALSE(store.verify(2, 1, &reason));  // the failed write left nothing committed
}

// A writer process saves checkpoints 1, 2, 3, … (two shards each, paced by a progress callback so the parent
// can catch it mid-write) and is killed with SIGKILL once the shard being written reaches `offset` bytes.
// Whatever the offset, the next resume finds a checkpoint that verifies, and never one newer than committed.
TEST_F(CheckpointStoreTest, KillNineMidWriteNeverLosesTheLastCheckpoint) {
  constexpr std::size_t kShard = 4u << 20;
  const std::vector<std::uint64_t> offsets{0, 1, 4096, 1u << 20, (3u << 20) + 123, kShard};
  int index = 0;
  for (const auto offset : offsets) {
    SCOPED_TRACE("kill at offset " + std::to_string(offset));
    const auto dir = root / ("run" + std::to_string(index++));
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(ready[0]);
      CheckpointStore store(dir);
      ShardWriteOptions paced;
      paced.on_progress = [](std::uint64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(3)); };
      for (std::int64_t step = 1;; ++step) {
        std::vector<ShardInfo> shards;
        for (int r = 0; r < 2; ++r)
          shards.push_back(
              store.write_shard(step, r, state_bytes(kShard, static_cast<std::uint64_t>(step)), paced));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // shards durable, manifest not yet
        store.commit(step, shards);
        store.prune(2, 2, step);
        const char c = 'c';
        if (::write(ready[1], &c, 1) != 1) ::_exit(1);
      }
    }
    ::close(ready[1]);
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);  // checkpoint 1 committed
    // Wait until the next shard being written (a .tmp file) holds at least `offset` bytes, then kill. For
    // offset == kShard the kill lands after a shard was renamed but before the manifest commit.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    bool hit = false;
    while (!hit && std::chrono::steady_clock::now() < deadline) {
      std::error_code ec;
      for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
        const auto name = entry.path().filename().string();
        const auto size = entry.is_regular_file(ec) ? entry.file_size(ec) : 0;
        const bool tmp = name.ends_with(".tmp");
        const bool uncommitted_shard =
            !tmp && name.ends_with(".shard") && !fs::exists(entry.path().parent_path() / "manifest.json", ec);
        if ((offset < kShard && tmp && size >= offset) || (offset == kShard && uncommitted_shard)) hit = true;
      }
    }
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ::close(ready[0]);
    EXPECT_TRUE(hit) << "the writer was never caught mid-write";
    ASSERT_TRUE(WIFSIGNALED(status));
    CheckpointStore store(dir);
    const auto choice = store.find_newest_valid(2);
    ASSERT_TRUE(choice.chosen) << "no verified checkpoint after the kill";
    std::vector<std::byte> back(kShard);
    store.read_shard(*choice.chosen, 1, back);
    EXPECT_EQ(back, state_bytes(kShard, static_cast<std::uint64_t>(choice.chosen->step)));
    // Skipped checkpoints are the newer, uncommitted ones (the kill landed mid-write of them).
    for (const auto& s : choice.skipped)
      EXPECT_LT(CheckpointStore::name_for(choice.chosen->step), s.checkpoint);
  }
}

}  // namespace
}  // namespace fb::resilience
