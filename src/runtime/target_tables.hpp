// The SIMD target registry of every engine: each engine's kernel file is compiled
// once per SIMD target by Highway (foreach_target), and each of those passes adds
// its target's table here when the library loads. Lookups by target bit then need
// no dispatcher tricks: nothing global is changed (Highway's
// SetSupportedTargetsForTest, which this replaces, changed the targets of the whole
// process while a lookup ran).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "conveyor/types.hpp"

namespace conveyor::detail {

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
