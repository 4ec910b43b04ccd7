// SPDX-License-Identifier: BSD-3-Clause
// Every environment variable Conveyor reads, in one table (in the style of NCCL's
// parameters): its name, default, meaning and when it is read. `conveyor info`
// lists them with their current values. Code reads them only through setting(),
// which refuses names missing from the table, so the table cannot fall behind.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/export.hpp"

namespace conveyor {

struct setting_info {
  std::string name;           // CONVEYOR_...
  std::string default_value;  // what applies when it is unset
  std::string meaning;
  std::string read_when;             // "first use in the process", "first use of a communicator", ...
  std::optional<std::string> value;  // from the environment now (unset or empty: nullopt)
};

/// The whole table, with the current environment's values.
CONVEYOR_API std::vector<setting_info> settings();

/// The environment's value of setting `name` (nullopt if unset or empty). Throws
/// conveyor::error(internal) for a name that is not in the table.
CONVEYOR_API std::optional<std::string> setting(std::string_view name);

/// The environment's value of `name`, or the table's default when it is unset or
/// empty (for settings whose default depends on the build, such as
/// CONVEYOR_MPI_MIN_BYTES). Throws as setting() does.
CONVEYOR_API std::string setting_or_default(std::string_view name);

}  // namespace conveyor
