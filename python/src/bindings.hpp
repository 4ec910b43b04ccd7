// SPDX-License-Identifier: BSD-3-Clause
// The extension's bindings, one function per engine (module.cpp calls each).
#pragma once

#include <nanobind/nanobind.h>

namespace conveyor::python {

void bind_collectives(nanobind::module_& m);   // bind_collectives.cpp
void bind_sinkhorn(nanobind::module_& m);      // bind_sinkhorn.cpp
void bind_dsop(nanobind::module_& m);          // bind_dsop.cpp
void bind_redistribute(nanobind::module_& m);  // bind_redistribute.cpp

}  // namespace conveyor::python
