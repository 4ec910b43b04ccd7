// SPDX-License-Identifier: BSD-3-Clause
// `conveyor-bench demo`: a tour of the engines next to what users would otherwise use.
#pragma once

namespace conveyor::bench {

int run_demo();

}  // namespace conveyor::bench
