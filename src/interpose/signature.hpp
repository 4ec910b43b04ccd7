// SPDX-License-Identifier: BSD-3-Clause
// What an MPI datatype and op mean to Conveyor, for libconveyor_mpi.
//
// Every rank of a collective must make the same decision (serve it with Conveyor,
// or pass it to the MPI library), or the ranks would meet in different
// collectives. MPI requires ranks to agree only on the *type signature* (the
// sequence of basic types), not on how their datatypes are built: one rank may
// pass 4 MPI_FLOAT and another 1 contiguous type of 4 floats, or a vector type.
// So the decision depends on the signature alone (the op, the one basic type the
// signature repeats, the element count), never on the layout; the layout only
// decides how the data reaches Conveyor (in place, or staged through a contiguous
// copy, see staging.hpp).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>

#include "conveyor/types.hpp"

namespace conveyor::interpose {

/// A datatype as a signature: `count` items of it are `count * per_item`
/// elements of the one basic (named) type `leaf`.
struct signature {
  bool homogeneous = false;  // false: several basic types (a struct, MPI_DOUBLE_INT, ...) or unreadable
  MPI_Datatype leaf = MPI_DATATYPE_NULL;
  std::size_t per_item = 0;   // leaf elements per item
  std::size_t leaf_size = 0;  // bytes per leaf element
  /// Items lie back to back from the buffer address with no gaps: a named type,
  /// or contiguous / dup constructors of one.
  bool contiguous = false;
  std::size_t item_extent = 0;  // bytes from one item to the next
};

/// The signature of `t` (MPI must be initialized). Named types are looked up in a
/// table; derived types are decoded with MPI_Type_get_envelope / get_contents on
/// every call (handles are reused after MPI_Type_free, so nothing derived is cached).
signature signature_of(MPI_Datatype t);

/// Conveyor's element type for reducing `leaf` with `o`, when MPI defines that
/// (op, type) pair and Conveyor implements it with the same meaning; nullopt
/// otherwise (the call then goes to the MPI library, which raises MPI's error
/// where the pair is invalid).
std::optional<dtype> reduction_dtype(MPI_Datatype leaf, op o);

/// Conveyor's op for a predefined MPI op; nullopt for MINLOC, MAXLOC, REPLACE,
/// NO_OP and user-defined ops.
std::optional<op> op_of(MPI_Op o);

}  // namespace conveyor::interpose
