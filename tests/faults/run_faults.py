#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Kills, abandons and starves MPI jobs in the middle of Conveyor's calls (issue 27).

    run_faults.py --job BUILD/tests/fault_job --ranks 4 -- MPIEXEC [FLAGS...]

For every engine of tests/faults/fault_job.cpp:
  kill      one rank is SIGKILLed while the others are inside the engine's calls
            (rank 1, then rank 0 for the next engine, ...);
  exit      rank 1 calls exit(0), without MPI_Finalize, while the others call;
and for the shared_memory allreduce's own segment:
  create_kill  rank 0 is SIGKILLed right after it created the segment, before any
            other rank mapped it (--pause-shim, preloaded, stops it there);
and for the engines with shared memory of their own:
  shm_full  the job gets a private 96 MiB /dev/shm, which rank 0 fills before the
            first call (needs root for the mount namespace; skipped otherwise,
            and said so);
  shm_full_named  the same for the shared_memory allreduce with memfd_create
            failing (--pause-shim), so its named /dev/shm fallback runs;
  mmap_fail the shared_memory allreduce with mmap of its segment failing on one
            rank only (rank 0, the creator, then rank 1; --pause-shim): every
            rank must fall back together.

Each case passes when: the job ends by itself within --limit seconds (measured:
the time from the fault to the launcher's exit is printed), no process of the
job survives it, and nothing named conveyor-* is left in /dev/shm (entries other
MPI files leave are listed, not failed: they are the MPI library's). shm_full
passes when every rank prints the same outcome (a fallback or a clear error) and
the job exits normally. Exit status: the number of failed cases.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

# The MPI libraries' own shared memory (not their shared windows) out of the full
# /dev/shm of the shm_full cases: Open MPI's btl/vader segments.
SHM_ELSEWHERE = {"OMPI_MCA_btl_vader_backing_directory": "/tmp"}

ENGINES = ["shared_memory", "ring", "one_sided", "sinkhorn", "outer"]
SHM_ENGINES = ["shared_memory", "one_sided", "sinkhorn"]  # sinkhorn: auto allreduce


def dev_shm():
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


def dev_shm_in_use():
    """The /dev/shm entries some live process has mapped or open: another job's
    (a concurrent MPI job on this machine), never a killed job's leftovers."""
    used = set()
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open("/proc/%s/maps" % pid) as f:
                for line in f:
                    at = line.find("/dev/shm/")
                    if at >= 0:
                        used.add(line[at + 9:].split()[0])
            for fd in os.listdir("/proc/%s/fd" % pid):
                target = os.readlink("/proc/%s/fd/%s" % (pid, fd))
                if target.startswith("/dev/shm/"):
                    used.add(target[9:].split()[0])
        except OSError:
            continue
    return used


def asan_runtime(job):
    """The AddressSanitizer runtime the job links (an ASan build), or ""."""
    out = subprocess.run(["ldd", job], capture_output=True, text=True).stdout
    m = re.search(r"libasan\.so\S*\s+=>\s+(\S+)", out)
    return m.group(1) if m else ""


def job_pids(job):
    out = subprocess.run(["pgrep", "-f", "^" + re.escape(job) + " "], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


class Launch:
    """One job in its own session (so a hang can be cleaned up), output read line by line."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True, bufsize=1)
        self.lines = []
        self.seen = {}
        os.set_blocking(self.proc.stdout.fileno(), False)

    def poll_lines(self):
        while True:
            try:
                line = self.proc.stdout.readline()
            except (OSError, ValueError):
                return
            if not line:
                return
            self.lines.append(line.rstrip("\n"))
            self.seen.setdefault(line.split(" ")[0], time.monotonic())  # first line of each kind

    def wait_for(self, pred, limit):
        end = time.monotonic() + limit
        while time.monotonic() < end:
            self.poll_lines()
            if pred(self.lines) or self.proc.poll() is not None:
                self.poll_lines()
                return pred(self.lines)
            time.sleep(0.02)
        return False

    def wait_exit(self, limit):
        end = time.monotonic() + limit
        while time.monotonic() < end:
            self.poll_lines()
            if self.proc.poll() is not None:
                self.poll_lines()
                return True
            time.sleep(0.02)
        return False

    def destroy(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def tagged(lines, word):
    return {int(m.group(1)): int(m.group(2)) for m in (re.match(word + r" (\d+) (\d+)", l) for l in lines) if m}


def run_case(args, engine, mode, victim):
    """Returns (passed, one-line description)."""
    shm_before = dev_shm()
    job_mode = {"create_kill": "kill", "shm_full_named": "shm_full", "mmap_fail": "calls"}.get(mode, mode)
    argv = args.mpiexec + [args.job, engine, job_mode]
    if job_mode == "shm_full":
        # A private mount namespace: the job's /dev/shm is a small tmpfs of its own.
        # The MPI library's own shared memory goes elsewhere (SHM_ELSEWHERE): a
        # full /dev/shm crashes the MPI library itself first (Open MPI 4.1: SIGBUS in
        # btl/vader's send), before any of Conveyor's calls runs.
        inner = "mount -t tmpfs -o size=96m tmpfs /dev/shm && exec " + " ".join(map(sh_quote, argv))
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner]
    env = dict(os.environ)
    if job_mode == "shm_full":
        env.update(SHM_ELSEWHERE)
    if mode in ("create_kill", "shm_full_named", "mmap_fail"):
        # A sanitizer build's runtime must come first among the preloads.
        env["LD_PRELOAD"] = ":".join(p for p in (asan_runtime(args.job), args.pause_shim, env.get("LD_PRELOAD", "")) if p)
        if mode == "mmap_fail":
            env["CONVEYOR_FAULT_MMAP_FAIL_RANK"] = str(victim)
        else:
            env["CONVEYOR_FAULT_PAUSE" if mode == "create_kill" else "CONVEYOR_FAULT_NO_MEMFD"] = "1"
    job = Launch(argv, env)
    try:
        if job_mode in ("shm_full", "calls"):
            if not job.wait_exit(args.limit):
                return False, "hang: no exit within %d s" % args.limit
            results = [l for l in job.lines if l.startswith("result ")]
            outcomes = {re.sub(r"^result \d+ ", "", re.sub(r" \(filled.*", "", l)) for l in results}
            ok = job.proc.returncode == 0 and len(results) == args.ranks and len(outcomes) == 1
            what = "; ".join(sorted(outcomes)) or "no result"
            left = sorted(n for n in dev_shm() - shm_before if n.startswith("conveyor"))
            if job_mode == "calls" and left:
                return False, "left in /dev/shm: %s" % left
            if not ok:
                return False, "exit %s, %d/%d ranks reported: %s\n%s" % (
                    job.proc.returncode, len(results), args.ranks, what, "\n".join(job.lines[-15:]))
            return True, "every rank: %s" % what
        if mode == "create_kill":
            created = lambda ls: [int(l.split()[1]) for l in ls if re.match(r"segment \d+$", l)]
            if not job.wait_for(created, args.limit):
                return False, "no segment was created:\n" + "\n".join(job.lines[-15:])
            fault_time = time.monotonic()
            os.kill(created(job.lines)[0], signal.SIGKILL)
        elif mode == "kill":
            if not job.wait_for(lambda ls: len(tagged(ls, "ready")) == args.ranks, args.limit):
                return False, "the job never got going (or ended first):\n" + "\n".join(job.lines[-15:])
            time.sleep(0.3)  # every rank is now inside its calls
            fault_time = time.monotonic()
            os.kill(tagged(job.lines, "ready")[victim], signal.SIGKILL)
        else:
            # Rank 1 leaves after its first calls; the others are calling by then.
            if not job.wait_for(lambda ls: tagged(ls, "exiting"), args.limit):
                return False, "rank 1 never got to its exit:\n" + "\n".join(job.lines[-15:])
            fault_time = job.seen["exiting"]
        if not job.wait_exit(args.limit):
            return False, "hang: survivors still running %d s after the fault" % args.limit
        seconds = time.monotonic() - fault_time
        if any(l.startswith("survived") for l in job.lines):
            return False, "a rank finished its calls as if nothing happened"
        # The launcher has exited; its ranks must be gone too (a short grace for reaping).
        end = time.monotonic() + 5
        while job_pids(args.job) and time.monotonic() < end:
            time.sleep(0.1)
        left = job_pids(args.job)
        if left:
            return False, "processes left running after the launcher exited: %s" % left
        new_shm = dev_shm() - shm_before
        ours = sorted(n for n in new_shm if n.startswith("conveyor"))
        if ours:
            return False, "left in /dev/shm: %s" % ours
        theirs = sorted(new_shm)
        note = " (the MPI library left %d /dev/shm entries: %s)" % (len(theirs), ", ".join(theirs[:3])) if theirs else ""
        return True, "job ended %.2f s after the fault, exit %s%s" % (seconds, job.proc.returncode, note)
    finally:
        job.destroy()
        # What the MPI library left: not the next case's concern. Only entries no
        # live process uses: a concurrent job's segments are not ours to remove
        # (removing them once broke another MPI job's MPI_Init on this machine).
        in_use = dev_shm_in_use()
        for name in dev_shm() - shm_before - in_use:
            if job_mode != "shm_full":
                try:
                    os.unlink(os.path.join("/dev/shm", name))
                except OSError:
                    pass


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--job", required=True)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--limit", type=int, default=60)
    p.add_argument("--only", help="run only the cases whose 'ENGINE MODE' contains this")
    p.add_argument("--pause-shim", help="tests/faults/pause_at_segment.c built (the create_kill case)")
    p.add_argument("mpiexec", nargs=argparse.REMAINDER)
    args = p.parse_args()
    if args.mpiexec and args.mpiexec[0] == "--":
        args.mpiexec = args.mpiexec[1:]
    args.mpiexec = args.mpiexec + ["-n", str(args.ranks)]
    args.job = os.path.realpath(args.job)
    cases = []
    for i, engine in enumerate(ENGINES):
        cases.append((engine, "kill", i % 2))
        cases.append((engine, "exit", 1))
    if args.pause_shim:
        cases.append(("shared_memory", "create_kill", 0))
        cases += [("shared_memory", "mmap_fail", victim) for victim in (0, 1)]
    can_mount = os.geteuid() == 0 and subprocess.run(
        ["unshare", "--mount", "true"], capture_output=True).returncode == 0
    if can_mount:
        cases += [(engine, "shm_full", 0) for engine in SHM_ENGINES]
        if args.pause_shim:
            cases.append(("shared_memory", "shm_full_named", 0))
    else:
        print("shm_full cases not run: a private /dev/shm needs root (unshare --mount)")
    if args.only:
        cases = [c for c in cases if args.only in "%s %s" % (c[0], c[1])]
    failed = 0
    for engine, mode, victim in cases:
        start = time.monotonic()
        ok, what = run_case(args, engine, mode, victim)
        failed += 0 if ok else 1
        label = "%s %s%s" % (engine, mode, " (rank %d killed)" % victim if mode in ("kill", "create_kill")
                              else " (on rank %d)" % victim if mode == "mmap_fail" else "")
        print("%s %-40s %5.1f s  %s" % ("PASS" if ok else "FAIL", label, time.monotonic() - start, what), flush=True)
    print("%d of %d fault cases passed" % (len(cases) - failed, len(cases)))
    return failed


if __name__ == "__main__":
    sys.exit(main())
