// SPDX-License-Identifier: BSD-3-Clause
// The C API's transform and redistribution options for the C++ tests that call
// the C API: initialized to their defaults (conveyor_*_init), then the fields
// every such test sets.
#pragma once

#include "conveyor/conveyor.h"

namespace conveyor::testing {

inline conveyor_transform c_transform(conveyor_layout src, conveyor_layout dst) {
  conveyor_transform t;
  conveyor_transform_init(&t);
  t.src = src;
  t.dst = dst;
  return t;
}

inline conveyor_redistribute_options c_redistribute_options() {
  conveyor_redistribute_options o;
  conveyor_redistribute_options_init(&o);
  return o;
}

}  // namespace conveyor::testing
