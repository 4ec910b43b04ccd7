// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/context.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "conveyor/settings.hpp"
#include "conveyor/types.hpp"
#include "runtime/cpu_affinity.hpp"
#include "runtime/simd_targets.hpp"

namespace conveyor::detail {

void throw_mpi_error(int rc, const char* what) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw error(errc::mpi, std::string(what) + " failed: " + std::string(msg, static_cast<std::size_t>(len)));
}

namespace {

// The registered engines' state makers, in slot order. Registration happens
// during static initialization, before MPI is initialized and before any context
// exists, so the table needs no lock when contexts read it.
engine_state_maker g_engine_state_makers[kMaxEngineStates] = {};
int g_engine_states = 0;

// The last communicator each thread looked up, and its context: repeated calls
// on one communicator (the common case) skip MPI_Initialized, MPI_Finalized and
// MPI_Comm_get_attr. The entry is good while `generation` is unchanged: it moves
// whenever a context goes away (a communicator freed, whose handle MPI may reuse)
// and when MPI_Finalize starts.
struct last_lookup {
  MPI_Comm comm = MPI_COMM_NULL;
  comm_context* ctx = nullptr;
  std::uint64_t generation = 0;
};
thread_local last_lookup last;

void forget_lookups() { g_context_generation.fetch_add(1, std::memory_order_acq_rel); }
}  // namespace

int register_engine_state(engine_state_maker make) {
  if (g_engine_states == kMaxEngineStates) std::abort();  // static initialization: nothing can catch
  g_engine_state_makers[g_engine_states] = make;
  return g_engine_states++;
}

namespace {

// The attribute holds a shared reference: plans built on the communicator keep
// its context (and private communicator) alive after the caller frees it.
int delete_context(MPI_Comm, int, void* value, void*) {
  forget_lookups();
  delete static_cast<std::shared_ptr<comm_context>*>(value);
  return MPI_SUCCESS;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first: from then on no
// cached lookup may be used.
int on_finalize(MPI_Comm, int, void*, void*) {
  forget_lookups();
  return MPI_SUCCESS;
}

void watch_finalize() {
  static const bool watching = [] {
    int k = MPI_KEYVAL_INVALID;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_finalize, &k, nullptr), "MPI_Comm_create_keyval");
    check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, k, nullptr), "MPI_Comm_set_attr");
    return true;
  }();
  (void)watching;
}

comm_context& remember(MPI_Comm comm, comm_context& ctx, std::uint64_t generation) {
  last = {comm, &ctx, generation};
  return ctx;
}

int new_keyval(MPI_Comm_delete_attr_function* on_delete) {
  int k = MPI_KEYVAL_INVALID;
  check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &k, nullptr), "MPI_Comm_create_keyval");
  return k;
}

// On the caller's communicator: its context, owned (see delete_context).
int keyval() {
  static const int key = new_keyval(delete_context);
  return key;
}

// Marks a private communicator with its own context (not owned: the context owns
// the communicator), so code running on it finds the same context again.
int self_keyval() {
  static const int key = new_keyval(MPI_COMM_NULL_DELETE_FN);
  return key;
}

node_layout build_layout(const comm_context& ctx, int ranks_per_node) {
  node_layout l;
  std::vector<int> node_key(static_cast<std::size_t>(ctx.size));
  if (ranks_per_node > 0) {
    for (int r = 0; r < ctx.size; ++r) node_key[static_cast<std::size_t>(r)] = r / ranks_per_node;
  } else {
    // Key of a node: the lowest rank on it.
    MPI_Comm shared;
    check_mpi(MPI_Comm_split_type(ctx.comm, MPI_COMM_TYPE_SHARED, ctx.rank, MPI_INFO_NULL, &shared),
              "MPI_Comm_split_type");
    int key = ctx.rank;
    int rc = MPI_Allreduce(MPI_IN_PLACE, &key, 1, MPI_INT, MPI_MIN, shared);
    // The node's CPUs: the union of its ranks' masks (runtime/cpu_affinity.hpp).
    cpu_mask cpus = usable_cpus();
    if (rc == MPI_SUCCESS) rc = MPI_Allreduce(MPI_IN_PLACE, cpus.words, kCpuMaskWords, MPI_UINT64_T, MPI_BOR, shared);
    MPI_Comm_free(&shared);
    check_mpi(rc, "MPI_Allreduce (node key, node CPUs)");
    l.node_cpus = cpus.count();
    check_mpi(MPI_Allgather(&key, 1, MPI_INT, node_key.data(), 1, MPI_INT, ctx.comm), "MPI_Allgather (node keys)");
  }
  // Number nodes in order of their lowest rank.
  std::vector<int> keys = node_key;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  l.nodes = static_cast<int>(keys.size());
  l.members.resize(keys.size());
  l.node_of.resize(static_cast<std::size_t>(ctx.size));
  l.local_of.resize(static_cast<std::size_t>(ctx.size));
  for (int r = 0; r < ctx.size; ++r) {
    const auto node = static_cast<int>(
        std::lower_bound(keys.begin(), keys.end(), node_key[static_cast<std::size_t>(r)]) - keys.begin());
    l.node_of[static_cast<std::size_t>(r)] = node;
    l.local_of[static_cast<std::size_t>(r)] = static_cast<int>(l.members[static_cast<std::size_t>(node)].size());
    l.members[static_cast<std::size_t>(node)].push_back(r);
  }
  l.max_local = 0;
  l.min_local = ctx.size;
  for (const auto& m : l.members) {
    l.max_local = std::max(l.max_local, static_cast<int>(m.size()));
    l.min_local = std::min(l.min_local, static_cast<int>(m.size()));
  }
  return l;
}

// Settings are read by each process from its own environment, and a launcher can
// give one rank a value the others lack. Each rank checks its own (`read`) while
// the communicator's context is made; then one MPI_Allreduce finds the lowest rank
// with a problem, which tells the others, and every rank throws the same error.
// Without this, collectives whose arguments are not agreed (allreduce's default,
// MPI's semantics) would throw on that rank alone and leave the others waiting.
// Once per communicator: the context is cached after it succeeds.
template <class Read>
void agree_on_settings(const comm_context& ctx, Read&& read) {
  errc code = errc::success;
  std::string problem;
  try {
    read();
  } catch (const error& e) {
    code = e.code();
    problem = e.message();
  }
  int first_bad = code == errc::success ? ctx.size : ctx.rank;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, ctx.comm), "MPI_Allreduce (settings)");
  if (first_bad == ctx.size) return;
  int header[2] = {static_cast<int>(code), static_cast<int>(problem.size())};
  check_mpi(MPI_Bcast(header, 2, MPI_INT, first_bad, ctx.comm), "MPI_Bcast (settings)");
  problem.resize(static_cast<std::size_t>(header[1]));
  check_mpi(MPI_Bcast(problem.data(), header[1], MPI_CHAR, first_bad, ctx.comm), "MPI_Bcast (settings)");
  throw error(static_cast<errc>(header[0]), "rank " + std::to_string(first_bad) + ": " + problem);
}

}  // namespace

comm_context::~comm_context() {
  forget_lookups();  // its private communicator's handle may be reused
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

const node_layout& comm_context::layout(int ranks_per_node) {
  if (last_layout && last_ranks_per_node == ranks_per_node) return *last_layout;
  auto it = layouts.find(ranks_per_node);
  if (it == layouts.end()) it = layouts.emplace(ranks_per_node, build_layout(*this, ranks_per_node)).first;
  last_ranks_per_node = ranks_per_node;
  last_layout = &it->second;
  return it->second;
}

comm_context& context_for(MPI_Comm user_comm) {
  const std::uint64_t generation = context_generation();
  if (user_comm == last.comm && last.generation == generation && user_comm != MPI_COMM_NULL) return *last.ctx;
  if (user_comm == MPI_COMM_NULL) throw error(errc::invalid_argument, "communicator is MPI_COMM_NULL");
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    throw error(errc::mpi,
                std::string("collectives need MPI to be ") + (finalized ? "not yet finalized" : "initialized"));
  }
  const int key = keyval();
  void* value = nullptr;
  int found = 0;
  watch_finalize();
  check_mpi(MPI_Comm_get_attr(user_comm, key, &value, &found), "MPI_Comm_get_attr");
  if (found) return remember(user_comm, **static_cast<std::shared_ptr<comm_context>*>(value), generation);
  check_mpi(MPI_Comm_get_attr(user_comm, self_keyval(), &value, &found), "MPI_Comm_get_attr");
  if (found) return remember(user_comm, *static_cast<comm_context*>(value), generation);

  int inter = 0;
  check_mpi(MPI_Comm_test_inter(user_comm, &inter), "MPI_Comm_test_inter");
  if (inter) throw error(errc::invalid_argument, "inter-communicators are not supported");

  auto ctx = std::make_shared<comm_context>();
  check_mpi(MPI_Comm_dup(user_comm, &ctx->comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(ctx->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(ctx->comm, &ctx->rank);
  MPI_Comm_size(ctx->comm, &ctx->size);
  agree_on_settings(*ctx, [&] {
    active_target();  // CONVEYOR_SIMD_TARGET: known, compiled in and runnable here
    if (const auto setting_text = setting("CONVEYOR_RANKS_PER_NODE")) {
      const char* v = setting_text->c_str();
      char* end = nullptr;
      const long x = std::strtol(v, &end, 10);
      if (*end != '\0' || x < 0 || x > (1 << 20)) {
        throw error(errc::invalid_argument, std::string("CONVEYOR_RANKS_PER_NODE='") + v + "' is not a rank count");
      }
      ctx->env_ranks_per_node = static_cast<int>(x);
    }
    for (int slot = 0; slot < g_engine_states; ++slot) {
      ctx->engine_states[static_cast<std::size_t>(slot)] = g_engine_state_makers[slot](*ctx);
    }
  });
  check_mpi(MPI_Comm_set_attr(ctx->comm, self_keyval(), ctx.get()), "MPI_Comm_set_attr");
  auto holder = std::make_unique<std::shared_ptr<comm_context>>(ctx);
  check_mpi(MPI_Comm_set_attr(user_comm, key, holder.get()), "MPI_Comm_set_attr");
  holder.release();
  return *ctx;
}

}  // namespace conveyor::detail
