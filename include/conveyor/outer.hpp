// SPDX-License-Identifier: BSD-3-Clause
// Deprecated name of conveyor/dsop.hpp, the DSOP engine's header: one name per
// engine (its folder src/dsop/, its namespace conveyor::dsop, Python's
// conveyor._dsop, C's conveyor/c/dsop.h). Kept for Conveyor 0.1's users; it
// warns, and goes in a later release (docs/api.md, "Deprecated names").
#pragma once

#pragma GCC warning "conveyor/outer.hpp is deprecated: include conveyor/dsop.hpp"
#include "conveyor/dsop.hpp"
