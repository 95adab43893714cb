#pragma once
// A console table printed row by row as a run measures (reports::CollectiveTableStream, GemmTableStream),
// finished by the run's end or by a signal's speaker thread (tools/interrupt_report.hpp), whichever comes
// first: both go through the lock. Shared, so that the speaker's copy outlives the command's frame.
#include <memory>
#include <mutex>
#include <optional>

namespace fb::tools {

template <class Table>
struct LiveTable {
  static std::shared_ptr<LiveTable> make() { return std::make_shared<LiveTable>(); }
  std::mutex mutex;
  std::optional<Table> table;  // empty: not printing row by row (-q, another rank, not started yet)
  bool closed = false;         // ended (run, hang or signal): a later closer prints nothing
};

}  // namespace fb::tools
