// SPDX-License-Identifier: BSD-3-Clause
#include "interpose/signature.hpp"

#include <vector>

namespace conveyor::interpose {
namespace {

// MPI's categories of basic types (MPI-3.1 section 5.9.2), which decide the ops
// each type may be reduced with; `other` types are moved (allgather) but never
// reduced by Conveyor.
enum class category { signed_int, unsigned_int, fortran_int, floating, complex, c_bool, byte, other, pair };

struct named_type {
  MPI_Datatype handle;
  category kind;
  MPI_Datatype leaf;  // the basic type it repeats (itself, or MPI_INT for MPI_2INT, ...)
  int multiplicity;   // leaf elements per item
  std::size_t leaf_size;
  std::size_t extent;  // of the handle itself
};

// The predefined types, built at first use (after MPI_Init: MPICH's handles are
// constants, Open MPI's are addresses, and Fortran handles may be null when the
// library was built without Fortran).
const std::vector<named_type>& named_types() {
  static const std::vector<named_type> table = [] {
    std::vector<named_type> t;
    auto add = [&t](MPI_Datatype h, category k, MPI_Datatype leaf = MPI_DATATYPE_NULL, int multiplicity = 1) {
      if (h == MPI_DATATYPE_NULL) return;
      if (leaf == MPI_DATATYPE_NULL) leaf = h;
      int size = 0;
      MPI_Aint lb = 0, extent = 0;
      if (PMPI_Type_size(leaf, &size) != MPI_SUCCESS || size <= 0) return;
      if (PMPI_Type_get_extent(h, &lb, &extent) != MPI_SUCCESS) return;
      t.push_back({h, k, leaf, multiplicity, static_cast<std::size_t>(size), static_cast<std::size_t>(extent)});
    };
    // Most used first: the lookup is a linear scan.
    add(MPI_FLOAT, category::floating);
    add(MPI_DOUBLE, category::floating);
    add(MPI_INT, category::signed_int);
    add(MPI_LONG, category::signed_int);
    add(MPI_BYTE, category::byte);
    add(MPI_CHAR, category::other);  // text: not a reduction type in C or MPI
    add(MPI_UNSIGNED, category::unsigned_int);
    add(MPI_UNSIGNED_LONG, category::unsigned_int);
    add(MPI_LONG_LONG, category::signed_int);
    add(MPI_LONG_LONG_INT, category::signed_int);
    add(MPI_UNSIGNED_LONG_LONG, category::unsigned_int);
    add(MPI_SHORT, category::signed_int);
    add(MPI_UNSIGNED_SHORT, category::unsigned_int);
    add(MPI_SIGNED_CHAR, category::signed_int);
    add(MPI_UNSIGNED_CHAR, category::unsigned_int);
    add(MPI_INT8_T, category::signed_int);
    add(MPI_INT16_T, category::signed_int);
    add(MPI_INT32_T, category::signed_int);
    add(MPI_INT64_T, category::signed_int);
    add(MPI_UINT8_T, category::unsigned_int);
    add(MPI_UINT16_T, category::unsigned_int);
    add(MPI_UINT32_T, category::unsigned_int);
    add(MPI_UINT64_T, category::unsigned_int);
    add(MPI_C_BOOL, category::c_bool);
    add(MPI_C_FLOAT_COMPLEX, category::complex);
    add(MPI_C_COMPLEX, category::complex);
    add(MPI_C_DOUBLE_COMPLEX, category::complex);
    add(MPI_C_LONG_DOUBLE_COMPLEX, category::complex);
    add(MPI_LONG_DOUBLE, category::floating);
    add(MPI_WCHAR, category::other);
    add(MPI_PACKED, category::other);
    add(MPI_AINT, category::fortran_int);  // "multi-language" integers: as Fortran's
    add(MPI_OFFSET, category::fortran_int);
    add(MPI_COUNT, category::fortran_int);
    add(MPI_INTEGER, category::fortran_int);
    add(MPI_INTEGER1, category::fortran_int);
    add(MPI_INTEGER2, category::fortran_int);
    add(MPI_INTEGER4, category::fortran_int);
    add(MPI_INTEGER8, category::fortran_int);
    add(MPI_REAL, category::floating);
    add(MPI_DOUBLE_PRECISION, category::floating);
    add(MPI_REAL4, category::floating);
    add(MPI_REAL8, category::floating);
    add(MPI_COMPLEX, category::complex);
    add(MPI_DOUBLE_COMPLEX, category::complex);
    add(MPI_COMPLEX8, category::complex);
    add(MPI_COMPLEX16, category::complex);
    add(MPI_LOGICAL, category::other);  // the compiler's LOGICAL representation: not Conveyor's
    add(MPI_CHARACTER, category::other);
    // Pairs of one type are that type twice (the same signature as a contiguous
    // type of 2); pairs of two types are heterogeneous (MINLOC / MAXLOC only).
    add(MPI_2INT, category::pair, MPI_INT, 2);
    add(MPI_2REAL, category::pair, MPI_REAL, 2);
    add(MPI_2DOUBLE_PRECISION, category::pair, MPI_DOUBLE_PRECISION, 2);
    add(MPI_2INTEGER, category::pair, MPI_INTEGER, 2);
    for (MPI_Datatype h : {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT}) {
      add(h, category::pair, h, 0);  // multiplicity 0 marks heterogeneous
    }
    return t;
  }();
  return table;
}

const named_type* find_named(MPI_Datatype h) {
  for (const named_type& n : named_types()) {
    if (n.handle == h) return &n;
  }
  return nullptr;
}

const named_type* find_leaf(MPI_Datatype leaf) {
  for (const named_type& n : named_types()) {
    if (n.handle == leaf && n.multiplicity == 1) return &n;
  }
  return nullptr;
}

// Walks the constructor tree of `t`, recording the one leaf type; false when a
// second leaf type appears or the tree cannot be read. `contiguous` turns false at
// any constructor other than dup and contiguous.
bool walk(MPI_Datatype t, MPI_Datatype& leaf, bool& contiguous) {
  int ni = 0, na = 0, nd = 0, combiner = 0;
  if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return false;
  if (combiner == MPI_COMBINER_NAMED) {
    const named_type* n = find_named(t);
    if (!n || n->multiplicity == 0) return false;  // unknown or heterogeneous
    if (leaf == MPI_DATATYPE_NULL) leaf = n->leaf;
    return leaf == n->leaf;
  }
  const bool readable = combiner == MPI_COMBINER_DUP || combiner == MPI_COMBINER_CONTIGUOUS ||
                        combiner == MPI_COMBINER_VECTOR || combiner == MPI_COMBINER_HVECTOR ||
                        combiner == MPI_COMBINER_INDEXED || combiner == MPI_COMBINER_HINDEXED ||
                        combiner == MPI_COMBINER_INDEXED_BLOCK || combiner == MPI_COMBINER_HINDEXED_BLOCK ||
                        combiner == MPI_COMBINER_STRUCT || combiner == MPI_COMBINER_SUBARRAY ||
                        combiner == MPI_COMBINER_DARRAY || combiner == MPI_COMBINER_RESIZED;
  if (!readable) return false;  // e.g. the F90 parameterized types
  if (combiner != MPI_COMBINER_DUP && combiner != MPI_COMBINER_CONTIGUOUS) contiguous = false;
  std::vector<int> ints(static_cast<std::size_t>(ni));
  std::vector<MPI_Aint> aints(static_cast<std::size_t>(na));
  std::vector<MPI_Datatype> types(static_cast<std::size_t>(nd));
  if (PMPI_Type_get_contents(t, ni, na, nd, ints.data(), aints.data(), types.data()) != MPI_SUCCESS) return false;
  bool ok = true;
  for (int i = 0; i < nd; ++i) {
    MPI_Datatype child = types[static_cast<std::size_t>(i)];
    // A struct member of block length 0 adds nothing to the signature.
    const bool counted = combiner != MPI_COMBINER_STRUCT || ints[static_cast<std::size_t>(i) + 1] > 0;
    if (ok && counted) ok = walk(child, leaf, contiguous);
    int cni = 0, cna = 0, cnd = 0, ccomb = 0;
    PMPI_Type_get_envelope(child, &cni, &cna, &cnd, &ccomb);
    if (ccomb != MPI_COMBINER_NAMED) PMPI_Type_free(&child);  // get_contents made a new handle
  }
  return ok;
}

}  // namespace

signature signature_of(MPI_Datatype t) {
  signature s;
  if (t == MPI_DATATYPE_NULL) return s;
  MPI_Aint lb = 0, extent = 0;
  int size = 0;
  if (const named_type* n = find_named(t)) {
    if (n->multiplicity == 0) return s;
    s.homogeneous = true;
    s.leaf = n->leaf;
    s.leaf_size = n->leaf_size;
    s.per_item = static_cast<std::size_t>(n->multiplicity);
    s.contiguous = true;
    s.item_extent = n->extent;
    return s;
  }
  MPI_Datatype leaf = MPI_DATATYPE_NULL;
  bool contiguous = true;
  if (!walk(t, leaf, contiguous) || leaf == MPI_DATATYPE_NULL) return s;
  const named_type* n = find_leaf(leaf);
  if (!n || PMPI_Type_size(t, &size) != MPI_SUCCESS || PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS) return s;
  s.homogeneous = true;
  s.leaf = leaf;
  s.leaf_size = n->leaf_size;
  s.per_item = static_cast<std::size_t>(size) / n->leaf_size;
  // Contiguous constructors of a named type leave no gaps and start at 0; the
  // extent test also rejects any oddity (a resized member would have stopped it).
  s.contiguous = contiguous && lb == 0 && static_cast<std::size_t>(extent) == static_cast<std::size_t>(size);
  s.item_extent = static_cast<std::size_t>(extent);
  return s;
}

std::optional<dtype> reduction_dtype(MPI_Datatype leaf, op o) {
  const named_type* n = find_leaf(leaf);
  if (!n) return std::nullopt;
  const category k = n->kind;
  const bool c_integer = k == category::signed_int || k == category::unsigned_int;
  const bool integer = c_integer || k == category::fortran_int;
  bool valid = false;  // MPI's table of (op, category)
  switch (o) {
    case op::max:
    case op::min:
      valid = integer || k == category::floating;
      break;
    case op::sum:
    case op::prod:
      valid = integer || k == category::floating || k == category::complex;
      break;
    case op::land:
    case op::lor:
    case op::lxor:
      valid = c_integer || k == category::c_bool;
      break;
    case op::band:
    case op::bor:
    case op::bxor:
      valid = integer || k == category::byte;
      break;
    case op::logaddexp:
      break;  // no MPI op means it
  }
  if (!valid) return std::nullopt;
  const std::size_t bytes = n->leaf_size;
  switch (k) {
    case category::signed_int:
    case category::fortran_int:
      if (bytes == 1) return dtype::int8;
      if (bytes == 2) return dtype::int16;
      if (bytes == 4) return dtype::int32;
      if (bytes == 8) return dtype::int64;
      return std::nullopt;
    case category::unsigned_int:
    case category::byte:
    case category::c_bool:  // 0 or 1 in one byte: the logical ops of uint8 give 0 or 1
      if (bytes == 1) return dtype::uint8;
      if (k != category::unsigned_int) return std::nullopt;
      if (bytes == 2) return dtype::uint16;
      if (bytes == 4) return dtype::uint32;
      if (bytes == 8) return dtype::uint64;
      return std::nullopt;
    case category::floating:
      if (bytes == 4) return dtype::float32;
      if (bytes == 8) return dtype::float64;
      return std::nullopt;  // long double, REAL16
    case category::complex:
      if (bytes == 8) return dtype::complex64;
      if (bytes == 16 && n->handle != MPI_C_LONG_DOUBLE_COMPLEX) return dtype::complex128;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::optional<op> op_of(MPI_Op o) {
  if (o == MPI_SUM) return op::sum;
  if (o == MPI_MAX) return op::max;
  if (o == MPI_MIN) return op::min;
  if (o == MPI_PROD) return op::prod;
  if (o == MPI_BAND) return op::band;
  if (o == MPI_BOR) return op::bor;
  if (o == MPI_BXOR) return op::bxor;
  if (o == MPI_LAND) return op::land;
  if (o == MPI_LOR) return op::lor;
  if (o == MPI_LXOR) return op::lxor;
  return std::nullopt;
}

}  // namespace conveyor::interpose
