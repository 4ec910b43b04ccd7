#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Conveyor on aarch64: a cross build (Debian's crossbuild-essential-arm64) against
# Debian's arm64 Highway, MPICH and GoogleTest, run under qemu-aarch64 with NEON
# only and with SVE at several vector lengths, where code that assumes a fixed lane
# count breaks. (This machine has no binfmt_misc: every program is started as
# `qemu-aarch64 -L /usr/aarch64-linux-gnu ...`.)
#
#   1. the arm64 packages, unpacked into a sysroot in the work directory: fetched
#      with `apt-get download` through a private apt configuration (arm64 lists of
#      its own, nothing installed on the host, the host's amd64 MPI untouched);
#   2. configure (tests/emulated/aarch64-toolchain.cmake) and build the library,
#      the tool and the test programs step 3 runs;
#   3. on each CPU: NEON (`-cpu max,sve=off`), SVE with 16, 32 and 256-byte
#      vectors, 64 too under scripts/test --scale (CONVEYOR_TEST_SCALE set)
#      (`sve-default-vector-length`; QEMU's `max` has SVE2 too, so Highway runs
#      SVE2_128 at 16 bytes and SVE_256 at 32): the unit tests (every op x dtype on
#      every target the CPU reports);
#   4. on NEON and on 32-byte SVE: the allreduce, Sinkhorn, DSOP and Redistribute
#      MPI tests at 2 ranks (the host's MPICH launcher starts one qemu per rank:
#      MPICH's PMI is a text protocol, so amd64 hydra serves arm64 ranks), and 1
#      rank on 64-byte SVE (--scale).
# Emulation is for correctness only: nothing here is timed.
#
# usage: aarch64.sh [--build-only] <work-dir>
# Prints one line per check and "N passed, M failed" last; exits non-zero on failure.
# --build-only: steps 1 and 2 alone (scripts/test runs them early, in the
# background; the later full run finds them done).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_only=0
[ "${1:-}" = --build-only ] && { build_only=1; shift; }
work=$(mkdir -p "$1" && cd "$1" && pwd)
passed=0
failed=0
fail() { failed=$((failed + 1)); echo "  FAILED  $*"; }

for tool in aarch64-linux-gnu-g++ qemu-aarch64; do
  command -v "$tool" >/dev/null || {
    echo "aarch64: $tool not installed (scripts/setup installs crossbuild-essential-arm64 and qemu-user)"
    echo "0 passed, 1 failed"; exit 1; }
done

# 1. The sysroot, once per work directory.
sysroot="$work/sysroot"
packages=(libhwy-dev libhwy1 libmpich-dev libmpich12 libgtest-dev libgmock-dev libcli11-dev
          libucx0 libhwloc15 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libnuma1 libudev1
          libgfortran5 libcap2)
if [ ! -f "$sysroot/.complete" ]; then
  echo "== aarch64: arm64 packages -> $sysroot"
  apt_dir="$work/apt"
  rm -rf "$sysroot" "$work/debs"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$work/debs" "$sysroot"
  keyring="signed-by=/usr/share/keyrings/debian-archive-keyring.gpg"
  {
    echo "deb [arch=arm64 $keyring] http://deb.debian.org/debian bookworm main"
    echo "deb [arch=arm64 $keyring] http://deb.debian.org/debian bookworm-updates main"
    echo "deb [arch=arm64 $keyring] http://deb.debian.org/debian-security bookworm-security main"
  } >"$apt_dir/sources.list"
  apt_opts=(-q -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::status=/dev/null
            -o Dir::Cache="$apt_dir/cache" -o APT::Architecture=arm64 -o APT::Architectures=arm64)
  if ! (apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 &&
        cd "$work/debs" && apt-get "${apt_opts[@]}" download "${packages[@]}" >>"$work/apt.log" 2>&1); then
    tail -n 20 "$work/apt.log"
    echo "aarch64: downloading the arm64 packages failed (log: $work/apt.log)"
    echo "0 passed, 1 failed"; exit 1
  fi
  for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$sysroot" || { echo "0 passed, 1 failed"; exit 1; }; done
  touch "$sysroot/.complete"
fi
libs="$sysroot/usr/lib/aarch64-linux-gnu"

# 2. The cross build: the library and the programs run below (not every test
# program: the others run natively on both MPIs; a third of the build's time).
build="$work/build"
# CMakePresets.json's arm64 presets: the configuration, and these targets.
mapfile -t programs < <(/usr/bin/python3 -c '
import json, sys
presets = json.load(open(sys.argv[1]))["buildPresets"]
print("\n".join(next(p for p in presets if p["name"] == "arm64")["targets"]))' "$root/CMakePresets.json")
echo "== aarch64: cross build (log: $work/build.log)"
if ! { (cd "$root" && cmake --preset arm64 -B "$build" -DCONVEYOR_ARM64_SYSROOT="$sysroot") &&
       cmake --build "$build" -j "${CONVEYOR_JOBS:-$(nproc)}" --target "${programs[@]}"; } >"$work/build.log" 2>&1; then
  tail -n 30 "$work/build.log"
  echo "aarch64: the cross build failed"
  echo "0 passed, 1 failed"; exit 1
fi
passed=$((passed + 1))
echo "  ok      cross build"
[ "$build_only" -eq 0 ] || exit 0

# check <name> <command...>: passes when the command exits 0 and prints GoogleTest's PASSED.
check() {
  local name=$1 log
  shift
  log="$work/$(tr -c 'A-Za-z0-9_.-' '_' <<<"$name").log"
  if timeout 600 "$@" >"$log" 2>&1 && grep -q "PASSED" "$log" && ! grep -q "FAILED" "$log"; then
    passed=$((passed + 1)); echo "  ok      $name"
  else
    fail "$name (log: $log)"; tail -n 30 "$log" | sed 's/^/    /'
  fi
}

# MPICH's UCX between emulated ranks: shared memory only (qemu-user has no
# process_vm_readv; UCX's TCP then hangs MPI_Finalize: tests/emulated/x86_cpu_levels.sh).
export UCX_TLS=self,posix,sysv
guest_env=(-E "LD_LIBRARY_PATH=$libs" -E CONVEYOR_TESTING=1 -E OMP_WAIT_POLICY=passive)
# (64-byte SVE, between 32 and 256, under --scale: docs/testing.md, "The figures
# behind the suite's choices".)
cpus=("max,sve=off" "max,sve-default-vector-length=16" "max,sve-default-vector-length=32")
[ -n "${CONVEYOR_TEST_SCALE:-}" ] && cpus+=("max,sve-default-vector-length=64")
cpus+=("max,sve-default-vector-length=256")
# The checks of one emulated process (the unit tests, 1-rank runs) run two at a
# time (as many as there are cores), all before those at 2 ranks, which run one
# at a time: MPICH's ranks poll, and slow several times over beside any other load. A single
# emulated process leaves the other core idle (docs/testing.md, session 42).
parallel=${CONVEYOR_JOBS:-$(nproc)}
results="$work/one-process"
pending=()
# soon <name> <command...>: check in the background, at most $parallel at once;
# its line and counts are printed by finish_soon, in order.
soon() {
  local id=${#pending[@]}
  pending+=("$1")
  ( passed=0 failed=0; check "$@" >"$results/$id.out" 2>&1; echo "$passed $failed" >"$results/$id.counts" ) &
  while [ "$(jobs -pr | wc -l)" -ge "$parallel" ]; do wait -n; done
}
finish_soon() {
  wait
  local id p f
  for id in "${!pending[@]}"; do
    cat "$results/$id.out"
    read -r p f <"$results/$id.counts" 2>/dev/null || { p=0 f=1; echo "  FAILED  ${pending[$id]}: no verdict"; }
    passed=$((passed + p)) failed=$((failed + f))
  done
}
rm -rf "$results" && mkdir -p "$results"
declare -A runnable_on=()
for phase in one-process ranks; do
  for cpu in "${cpus[@]}"; do
    emu=(qemu-aarch64 -cpu "$cpu" -L /usr/aarch64-linux-gnu "${guest_env[@]}")
    case $cpu in *sve=off) name=NEON ;; *) name="SVE ${cpu##*=} B" ;; esac
    if [ "$phase" = one-process ]; then
      runnable=$("${emu[@]}" "$build/tools/conveyor" info 2>&1 | sed -n 's/^ *SIMD runnable *//p')
      echo "== aarch64 $name: runnable targets: ${runnable:-none reported}"
      [ -n "$runnable" ] || { fail "conveyor info under $cpu"; continue; }
      runnable_on[$cpu]=$runnable
    fi
    [ -n "${runnable_on[$cpu]:-}" ] || continue
    # Under SVE, the NEON target's tests are left out (NEON's code does not change
    # with the SVE vector length; the NEON CPU runs them), and LargeBuffers (2^21
    # elements of every type; the kernels have no path of their own for long
    # buffers, so it is memory size more than instructions) runs on one scalable
    # target (SVE, at 16-byte vectors) and on SVE_256 at 32 (the only length it
    # runs at).
    # Every target's and length's tails are EveryPairEveryLengthUpTo1000's.
    # The times that set this split: docs/testing.md, "The figures behind the
    # suite's choices".
    unit_filter=()
    case $name in
      NEON) ;;
      "SVE 16 B") unit_filter=(--gtest_filter=-*/NEON:*.LargeBuffers/SVE2:*.LargeBuffers/SVE2_128) ;;
      "SVE 32 B") unit_filter=(--gtest_filter=-*/NEON:*.LargeBuffers/SVE:*.LargeBuffers/SVE2) ;;
      *) unit_filter=(--gtest_filter=-*/NEON:*.LargeBuffers/*) ;;
    esac
    [ "$phase" = one-process ] && soon "$name unit tests" "${emu[@]}" "$build/tests/conveyor_unit_tests" "${unit_filter[@]}"
    ranks=()
    case $name in NEON | "SVE 32 B") ranks=(2) ;; "SVE 64 B") ranks=(1) ;; esac
    for np in "${ranks[@]}"; do
      if [ "$np" -eq 1 ]; then run=soon; [ "$phase" = one-process ] || continue
      else run=check; [ "$phase" = ranks ] || continue; fi
      for t in allreduce sinkhorn outer redistribute; do
        filter=()  # (the huge-page test is one of memory size, not of instructions: native runs have it)
        [ "$t" = sinkhorn ] && filter=(--gtest_filter=-SinkhornTransport.KernelPastTheHugePageThreshold)
        $run "$name $t tests np$np" mpiexec.mpich -n "$np" "${emu[@]}" "$build/tests/conveyor_${t}_tests" "${filter[@]}"
      done
    done
    # The point-cloud kernels on every target this CPU runs (SVE2, SVE, NEON: its
    # EverySimdTarget and FarFromTheOrigin tests switch targets); not the
    # eps-scaling test (thousands of iterations: minutes emulated).
    if [ "$name" = "SVE 32 B" ] && [ "$phase" = one-process ]; then
      soon "$name sinkhorn_points tests np1" mpiexec.mpich -n 1 "${emu[@]}" "$build/tests/conveyor_sinkhorn_points_tests" \
        --gtest_filter=-*EpsScaling*
    fi
  done
  [ "$phase" = one-process ] && finish_soon
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
