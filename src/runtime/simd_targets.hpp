// The SIMD targets of every engine, in one place:
//  - which targets the library was compiled for and which this CPU runs;
//  - the ACTIVE target, one for the whole library (CONVEYOR_SIMD_TARGET or the best
//    runnable one, chosen at first use; conveyor::set_simd_target changes it), so the
//    reductions, Sinkhorn, DSOP and transpose kernels always run the same ISA;
//  - the registry of each engine's kernel tables: each engine's kernel file is
//    compiled once per target by Highway (foreach_target), and each pass adds its
//    target's table here when the library loads. Lookups by target bit need no
//    dispatcher tricks and change nothing global (Highway's
//    SetSupportedTargetsForTest, which this replaced, changed the targets of the
//    whole process while a lookup ran).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/types.hpp"

namespace conveyor::detail {

struct simd_target_entry {
  std::int64_t bit;   // Highway's HWY_* target bit
  std::string name;   // Highway's name for it, e.g. "AVX2"
};

/// Targets compiled into the library that this CPU can run, best first.
std::vector<simd_target_entry> runnable_targets();
/// Targets compiled into the library, whether or not this CPU can run them.
std::vector<std::string> compiled_target_names();

/// Highway's bit for the active target (one atomic load after the first call).
std::int64_t active_target();
/// Highway's name for the active target.
std::string active_target_name();
/// Makes `name` (case insensitive) the active target; empty: the best runnable one.
/// Throws invalid_argument for a target this CPU cannot run. Not to be called
/// while another thread runs kernels.
void select_target(std::string_view name);

template <class Table>
class target_tables {
 public:
  static target_tables& instance() {
    static target_tables registry;
    return registry;
  }
  /// Called by each compiled target's pass at load time (single-threaded).
  bool add(std::int64_t bit, const Table* table) {
    tables_[bit] = table;
    return true;
  }
  /// The table of target `bit` (one of the targets compiled into the library).
  const Table& get(std::int64_t bit) const {
    const auto it = tables_.find(bit);
    if (it == tables_.end()) throw error(errc::internal, "no kernels were compiled for SIMD target bit " + std::to_string(bit));
    return *it->second;
  }

 private:
  std::map<std::int64_t, const Table*> tables_;  // written only while the library loads
};

}  // namespace conveyor::detail

/// Inside an engine's HWY_NAMESPACE: registers this pass's table, `getter()`
/// returning a pointer to it, under the pass's target bit.
#define CONVEYOR_REGISTER_TARGET_TABLE(Table, getter)                                                 \
  [[maybe_unused]] const bool conveyor_registered_##getter =                                          \
      ::conveyor::detail::target_tables<Table>::instance().add(static_cast<std::int64_t>(HWY_TARGET), \
                                                               getter())
