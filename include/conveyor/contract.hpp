// SPDX-License-Identifier: BSD-3-Clause
// The collective contract: how every collective entry point of Conveyor (C++, C
// and Python) fails the same way on every rank instead of hanging the others.
//
//   1. Local checks. Everything one rank can check alone (pointers, enum values,
//      names, array dtypes and shapes, sizes) becomes this rank's problem
//      (`check`, `fail`); the arguments that must be equal on every rank are
//      listed (`must_match`).
//   2. One agreement (`agree`): a single MPI_Allreduce of a fixed-size record
//      (26 int64) on the library's private duplicate of the communicator. If any
//      rank had a problem, the lowest such rank broadcasts its code and message
//      and every rank throws that same conveyor::error. Otherwise, if a listed
//      argument differs between ranks, every rank throws the same
//      "ranks passed different ..." error.
//   3. The operation, on the private communicator (MPI errors returned, never
//      fatal; never on the caller's communicator).
//
// A front end that converts arguments before calling an entry point (the C API,
// the Python bindings, a wrapper of your own) opens a collective_call on the same
// communicator first and converts inside `check`. The entry point's own
// collective_call then joins the open one (same thread, same communicator, not yet
// agreed), so the front end's problems and the entry's checks travel in the same
// single agreement. A front end that found a problem does not call the entry
// point: `finish_front_end` agrees in its place.
//
// The communicator itself cannot be agreed on: MPI_COMM_NULL, an
// inter-communicator or MPI not initialized throws on the calling rank alone
// (that rank is not part of any call the others make).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "conveyor/types.hpp"

namespace conveyor {

class collective_call;
namespace detail {
struct comm_context;
comm_context& context_of(const collective_call& call);
}  // namespace detail

class CONVEYOR_API collective_call {
 public:
  /// Arguments that can be listed for matching in one call.
  static constexpr int max_matched = 16;

  /// Opens the call of `operation` (e.g. "allreduce": a string that outlives the
  /// call, such as a literal) on `comm`; the first call on
  /// a communicator creates its private duplicate (collective over `comm`).
  collective_call(std::string_view operation, MPI_Comm comm);
  ~collective_call();
  collective_call(const collective_call&) = delete;
  collective_call& operator=(const collective_call&) = delete;

  /// Runs `check` unless a problem was already found; a conveyor::error it throws
  /// becomes this rank's problem. The first problem wins.
  template <class F>
  collective_call& check(F&& check) {
    if (!ok()) return *this;
    try {
      check();
    } catch (const error& e) {
      fail(e.code(), e.message());
    } catch (const std::bad_alloc&) {
      fail(errc::internal, "out of memory");
    }
    return *this;
  }
  /// Records a problem of this rank (ignored if one is already recorded).
  collective_call& fail(errc code, std::string message);
  bool ok() const;

  /// An argument that must be the same on every rank; `what` names it in the
  /// error ("counts", "dtypes"). Values shown as numbers, dtype or op names.
  collective_call& must_match(std::string_view what, std::int64_t value);
  collective_call& must_match(std::string_view what, dtype value);
  collective_call& must_match(std::string_view what, op value);
  /// An enum value, shown by its name: must_match("transports", t, transport_name).
  template <class E>
  collective_call& must_match(std::string_view what, E value, std::string_view (*name)(E)) {
    return must_match_shown(what, static_cast<std::int64_t>(value),
                            [name](std::int64_t v) { return std::string(name(static_cast<E>(v))); });
  }
  /// A value shown by `show` in the error.
  collective_call& must_match_shown(std::string_view what, std::int64_t value,
                                    std::function<std::string(std::int64_t)> show);
  /// A real value, compared by its bits (so NaN never matches anything).
  collective_call& must_match_real(std::string_view what, double value);
  /// A digest of several arguments (a layout, a list): compared, never shown.
  collective_call& must_match_digest(std::string_view what, std::uint64_t digest);
  /// Like must_match, but a rank without a value (nullopt) accepts any; after
  /// agree(), `agreed(what)` is the value the others passed.
  collective_call& may_match(std::string_view what, std::optional<std::int64_t> value,
                             std::function<std::string(std::int64_t)> show = nullptr);

  /// Step 2 above: collective. Throws the same conveyor::error on every rank, or
  /// returns on every rank.
  void agree();
  /// validate ? agree() : throw this rank's own problem on this rank alone (MPI's
  /// semantics: a bad argument on one rank is erroneous, the others may hang).
  void agree_if(bool validate);
  /// For front ends: if a problem was found, the entry point will not be called,
  /// so agree here in its place (when it would have agreed) or throw locally.
  void finish_front_end(bool entry_agrees = true);

  /// For a front end that has agreed by other means before calling the entry point
  /// (ScaLAPACK's drop-ins: their one BLACS exchange carries every argument and
  /// every process's problems to all of them): the joining entry point's agree()
  /// then communicates nothing. A local problem it still finds is a gap in the
  /// front end's agreement, thrown as errc::internal on this rank.
  void agreed_by_caller();
  /// False when agree() will not communicate (agreed by the caller): arguments
  /// need not be listed (a digest need not be computed).
  bool matching() const;

  /// After agree(): the largest value passed for `what` by any rank (nullopt if
  /// none passed one).
  std::optional<std::int64_t> agreed(std::string_view what) const;

  /// The private communicator (errors returned) and this rank's place in it.
  MPI_Comm comm() const;
  int rank() const;
  int size() const;

  struct state;

 private:
  friend detail::comm_context& detail::context_of(const collective_call& call);
  state* state_;
  bool owns_ = false;  // false when this call joined an open one
};

/// A digest of a list of integers, for must_match_digest.
CONVEYOR_API std::uint64_t digest_of(const std::int64_t* values, std::size_t count, std::uint64_t seed = 0);

}  // namespace conveyor
