// SPDX-License-Identifier: BSD-3-Clause
// Decoded datatype layouts kept across calls, so that a repeated all-to-all (an
// FFT's every step) decodes its types once.
//
// A derived type's layout is cached on the type itself, as an MPI attribute
// (MPI_Type_set_attr with a keyval of our own): MPI deletes it when the program
// frees the type, so a freed handle that MPI hands out again for another type
// never finds the old layout (a cache keyed on handles would). MPI_Type_dup does
// not copy it (MPI_TYPE_NULL_COPY_FN): the duplicate is decoded once for itself.
// Predefined types are never freed: their layouts live in one table per process.
// Thread-safe: lookups and insertions hold one mutex; a layout, once cached, is
// never changed, and lives until its type is freed (using a type in a call while
// another thread frees it is erroneous in MPI).
#pragma once

#include <mpi.h>

#include <cstdint>

#include "redistribute/datatype_layout.hpp"

namespace conveyor::redistribute::detail {

/// The layout of `t` (MPI initialized; `t` committed or predefined), decoded at
/// its first use and kept while `t` lives; adds 1 to `decoded` when a derived
/// type was decoded now.
const type_layout& cached_layout(MPI_Datatype t, int& decoded);

/// How many cached layouts MPI has deleted so far (their types freed): while it
/// has not changed, every handle whose layout was looked up still names that type.
std::uint64_t layouts_deleted();

}  // namespace conveyor::redistribute::detail
