# SPDX-License-Identifier: BSD-3-Clause
"""The arguments the point-cloud benchmarks share (bench/points_*.py): sizes,
dimensions, dtypes, rounds and the two iteration counts whose time difference
gives one iteration; and their rounds of child processes, variant by variant."""
import json
import os
import subprocess
import sys


def add_point_arguments(parser, n=100000, dims="3", dtypes="float64,float32", rounds=3, lo=1, hi=2):
    parser.add_argument("--n", type=int, default=n, help="points per cloud")
    parser.add_argument("--dims", default=dims)
    parser.add_argument("--dtypes", default=dtypes)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--lo", type=int, default=lo)
    parser.add_argument("--hi", type=int, default=hi)
    return parser


def alternating_children(child, args, dtype, variants):
    """Runs the child script (argv: n, dims, dtype, lo, hi; prints JSON) once per
    round and variant in a fresh process, one thread, the variants' order
    reversed every other round (so none always runs first); variants: name ->
    extra environment. Returns name -> the rounds' parsed outputs."""
    out = {name: [] for name in variants}
    for r in range(args.rounds):
        for name in (list(variants) if r % 2 == 0 else list(reversed(list(variants)))):
            env = dict(os.environ, OMP_NUM_THREADS="1", **variants[name])
            res = subprocess.run([sys.executable, "-c", child, str(args.n), args.dims, dtype, str(args.lo),
                                  str(args.hi)], env=env, check=True, capture_output=True, text=True)
            out[name].append(json.loads(res.stdout))
    return out
