// SPDX-License-Identifier: BSD-3-Clause
// The collective contract (include/conveyor/contract.hpp).
//
// The agreement record, reduced with MPI_MAX in one MPI_Allreduce:
//   [0]          size - rank on a rank with a problem, else 0: the lowest failing rank
//   [1]          number of listed arguments, negated on [1] and compared like them
//   [2 + 2i]     value i;  [3 + 2i]  -value i   (max of both: the max and the min)
// An unlisted slot, or a may_match without a value, holds INT64_MIN in both places
// and so never wins a max. Values are clamped above INT64_MIN so -value exists.
#include "conveyor/contract.hpp"

#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/context.hpp"

namespace conveyor {

namespace {

struct slot {
  std::string what;
  std::int64_t value = INT64_MIN;
  bool present = false;
  bool hidden = false;                            // a digest: compared, never shown
  std::function<std::string(std::int64_t)> show;  // null: as a number
};

constexpr int kRecord = 2 + 2 * collective_call::max_matched;

std::string show_real(std::int64_t v) {
  double x;
  std::memcpy(&x, &v, sizeof x);
  char text[32];
  for (int digits = 6; digits <= 17; ++digits) {  // the shortest that reads back the same
    std::snprintf(text, sizeof text, "%.*g", digits, x);
    if (std::strtod(text, nullptr) == x) break;
  }
  return text;
}

}  // namespace

struct collective_call::state {
  std::string_view operation;  // a literal of the caller's (see the constructor)
  detail::comm_context* ctx = nullptr;
  errc code = errc::success;
  std::string message;
  std::vector<slot> slots;
  std::array<std::int64_t, kRecord> result{};
  bool agreed = false;
  bool agreed_by_caller = false;
  state* outer = nullptr;  // the call that was open on this thread before this one
};

namespace {

// Per thread: the innermost open call (the one an entry point may join), kept in
// detail::t_open_collective_call, and one spare state kept from the last
// finished call, so a call allocates nothing once its thread has made one (the
// small-message allreduce is on this path, where a heap allocation and free are a
// visible share of a call: docs/results.md, "The wrapper's own cost"). The spare
// is freed when the thread ends.
struct thread_calls {
  collective_call::state* spare = nullptr;
  ~thread_calls();
};
thread_local thread_calls calls;

collective_call::state* open_call() {
  return static_cast<collective_call::state*>(const_cast<void*>(detail::t_open_collective_call));
}

// Conveyor's calls are MPI calls: a call that starts while another thread has one
// open needs MPI_THREAD_MULTIPLE, and below it the MPI library would interleave
// the two calls' messages (wrong results or a hang). Checked when a thread opens
// its outermost call, so it is seen when the calls overlap at their start (a
// repeated allreduce's fast path skips it). One call at a time from a thread
// other than the main one is accepted at every level, as MPI libraries do in
// practice (the standard asks for MPI_THREAD_SERIALIZED), so that programs the
// interposer serves keep working.
void check_thread_level(std::string_view operation) {
  static const int provided = [] {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    return level;
  }();
  if (provided == MPI_THREAD_MULTIPLE || !detail::any_collective_call_open()) return;
  const char* const level_name = provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                                 : provided == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED"
                                                                   : "MPI_THREAD_SINGLE";
  throw error(errc::mpi, std::string(operation) + ": another thread has a Conveyor call open, but MPI provides " +
                             level_name + " (concurrent calls need MPI_Init_thread with MPI_THREAD_MULTIPLE)");
}

}  // namespace

thread_calls::~thread_calls() { delete spare; }

collective_call::collective_call(std::string_view operation, MPI_Comm comm) {
  if (!open_call()) check_thread_level(operation);  // before any MPI call of this one
  detail::comm_context& ctx = detail::context_for(comm);
  thread_calls& mine = calls;
  state* const open = open_call();
  if (open && open->ctx == &ctx && !open->agreed) {
    state_ = open;
    return;
  }
  if (mine.spare) {
    state_ = mine.spare;
    mine.spare = nullptr;
    state_->code = errc::success;
    state_->message.clear();
    state_->slots.clear();
    state_->agreed = state_->agreed_by_caller = false;
  } else {
    state_ = new state();
  }
  owns_ = true;
  state_->operation = operation;
  state_->ctx = &ctx;
  state_->outer = open;
  detail::t_open_collective_call = state_;
  detail::g_open_collective_calls.fetch_add(1, std::memory_order_relaxed);
}

collective_call::~collective_call() {
  if (!owns_) return;
  detail::g_open_collective_calls.fetch_sub(1, std::memory_order_relaxed);
  thread_calls& mine = calls;
  if (open_call() == state_) detail::t_open_collective_call = state_->outer;
  if (!mine.spare) mine.spare = state_;
  else delete state_;
}

collective_call& collective_call::fail(errc code, std::string message) {
  if (state_->code != errc::success) return *this;
  if (code == errc::success) code = errc::internal;
  // "allreduce: x" from a shared helper inside allreduce's checks reads "x".
  const std::string prefix = std::string(state_->operation) + ": ";
  if (message.compare(0, prefix.size(), prefix) == 0) message.erase(0, prefix.size());
  state_->code = code;
  state_->message = std::move(message);
  return *this;
}

bool collective_call::ok() const { return state_->code == errc::success; }

namespace {

void add_slot(collective_call::state& s, std::string_view what, std::optional<std::int64_t> value,
              std::function<std::string(std::int64_t)> show, bool hidden = false) {
  if (s.slots.size() >= static_cast<std::size_t>(collective_call::max_matched)) {
    throw error(errc::internal, std::string(s.operation) + ": more than " +
                                    std::to_string(collective_call::max_matched) + " arguments listed for matching");
  }
  slot x;
  x.what = std::string(what);
  x.present = value.has_value();
  x.value = value ? std::max<std::int64_t>(*value, INT64_MIN + 1) : INT64_MIN;
  x.hidden = hidden;
  x.show = std::move(show);
  s.slots.push_back(std::move(x));
}

std::string show_dtype(std::int64_t v) {
  return v >= 0 && v < dtype_count ? std::string(dtype_name(static_cast<dtype>(v))) : std::to_string(v);
}

}  // namespace

collective_call& collective_call::must_match(std::string_view what, std::int64_t value) {
  add_slot(*state_, what, value, nullptr);
  return *this;
}

collective_call& collective_call::must_match(std::string_view what, dtype value) {
  add_slot(*state_, what, static_cast<std::int64_t>(value), show_dtype);
  return *this;
}

collective_call& collective_call::must_match(std::string_view what, op value) {
  return must_match(what, value, op_name);
}

collective_call& collective_call::must_match_shown(std::string_view what, std::int64_t value,
                                                   std::function<std::string(std::int64_t)> show) {
  add_slot(*state_, what, value, std::move(show));
  return *this;
}

collective_call& collective_call::must_match_real(std::string_view what, double value) {
  // Equal reals have equal bits, except 0.0 and -0.0.
  if (value == 0) value = 0;
  std::int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  add_slot(*state_, what, bits, show_real);
  return *this;
}

collective_call& collective_call::must_match_digest(std::string_view what, std::uint64_t digest) {
  add_slot(*state_, what, static_cast<std::int64_t>(digest >> 1), nullptr, true);
  return *this;
}

collective_call& collective_call::may_match(std::string_view what, std::optional<std::int64_t> value,
                                            std::function<std::string(std::int64_t)> show) {
  add_slot(*state_, what, value, std::move(show));
  return *this;
}

void collective_call::agree() {
  state& s = *state_;
  if (s.agreed) throw error(errc::internal, std::string(s.operation) + ": agreed twice");
  s.agreed = true;
  if (s.agreed_by_caller) {
    if (!ok())
      throw error(errc::internal, std::string(s.operation) + ": a problem the caller's agreement missed: " + s.message);
    return;
  }
  detail::comm_context& ctx = *s.ctx;

  std::array<std::int64_t, kRecord> r;
  r.fill(INT64_MIN);
  r[0] = ok() ? 0 : ctx.size - ctx.rank;
  const auto n = static_cast<std::int64_t>(s.slots.size());
  r[1] = ok() ? n : INT64_MIN;  // a failing rank may not have reached its list
  for (std::size_t i = 0; i < s.slots.size(); ++i) {
    if (!s.slots[i].present) continue;
    r[2 + 2 * i] = s.slots[i].value;
    r[3 + 2 * i] = -s.slots[i].value;
  }
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, r.data(), kRecord, MPI_INT64_T, MPI_MAX, ctx.comm),
                    "MPI_Allreduce (collective contract)");
  s.result = r;

  if (r[0] > 0) {
    // The lowest failing rank tells everyone its code and message.
    const int root = ctx.size - static_cast<int>(r[0]);
    std::string text = std::string(s.operation) + ": rank " + std::to_string(root) + ": " + s.message;
    int header[2] = {static_cast<int>(s.code), static_cast<int>(text.size())};
    detail::check_mpi(MPI_Bcast(header, 2, MPI_INT, root, ctx.comm), "MPI_Bcast (collective contract)");
    text.resize(static_cast<std::size_t>(header[1]));
    detail::check_mpi(MPI_Bcast(text.data(), header[1], MPI_CHAR, root, ctx.comm), "MPI_Bcast (collective contract)");
    throw error(static_cast<errc>(header[0]), text);
  }
  // No problem anywhere, so every rank listed its arguments: compare them.
  for (std::size_t i = 0; i < s.slots.size(); ++i) {
    const std::int64_t hi = r[2 + 2 * i], lo = r[3 + 2 * i] == INT64_MIN ? INT64_MIN : -r[3 + 2 * i];
    if (hi == INT64_MIN || hi == lo) continue;
    const slot& x = s.slots[i];
    std::string text = std::string(s.operation) + ": ranks passed different " + x.what;
    const auto show = [&x](std::int64_t v) { return x.show ? x.show(v) : std::to_string(v); };
    if (!x.hidden) text += " (" + show(lo) + " to " + show(hi) + ")";
    throw error(x.what == "dtypes" ? errc::invalid_type : errc::invalid_argument, text);
  }
  if (r[1] != n) {
    throw error(errc::internal, std::string(s.operation) + ": ranks listed different numbers of arguments to match");
  }
}

void collective_call::agreed_by_caller() { state_->agreed_by_caller = true; }

bool collective_call::matching() const { return !state_->agreed_by_caller; }

void collective_call::agree_if(bool validate) {
  if (validate) return agree();
  state& s = *state_;
  s.agreed = true;
  if (!ok()) throw error(s.code, std::string(s.operation) + ": rank " + std::to_string(s.ctx->rank) + ": " + s.message);
}

void collective_call::finish_front_end(bool entry_agrees) {
  if (ok()) return;
  if (entry_agrees) agree();
  agree_if(false);
}

std::optional<std::int64_t> collective_call::agreed(std::string_view what) const {
  const state& s = *state_;
  for (std::size_t i = 0; i < s.slots.size(); ++i) {
    if (s.slots[i].what == what) {
      const std::int64_t v = s.result[2 + 2 * i];
      return s.agreed && v != INT64_MIN ? std::optional<std::int64_t>(v) : std::nullopt;
    }
  }
  return std::nullopt;
}

namespace detail {
comm_context& context_of(const collective_call& call) { return *call.state_->ctx; }
}  // namespace detail

MPI_Comm collective_call::comm() const { return state_->ctx->comm; }
int collective_call::rank() const { return state_->ctx->rank; }
int collective_call::size() const { return state_->ctx->size; }

std::uint64_t digest_of(const std::int64_t* values, std::size_t count, std::uint64_t seed) {
  // FNV-1a over the bytes, seeded; a digest, not a security property.
  std::uint64_t h = 1469598103934665603ULL ^ seed;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t v;
    std::memcpy(&v, &values[i], sizeof v);
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 1099511628211ULL;
    }
  }
  return h;
}

}  // namespace conveyor
