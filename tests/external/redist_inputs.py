#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Inputs of our own for ScaLAPACK's REDIST testers (GEMR2D.dat / TRMR2D.dat format).

The upstream inputs use grids of up to 2 x 2 with source processes 0 and square
blocks mostly; these are the calls real programs make beyond them: grids of every
shape that fits in NP processes (1 x P, P x 1, non-square, grids that leave
processes idle), nonzero source processes, offsets IA/JA/IB/JB != 1, block sizes
that do not divide the matrix, 1 x 1 and empty submatrices, and many cases in one
run (the plan cache under pressure). Deterministic (seeded by NP and the kind).

usage: redist_inputs.py <gemr|trmr> <np> <cases>  (writes the file to stdout)
"""
import random
import sys


def grids(np_):
    return [(p, q) for p in range(1, np_ + 1) for q in range(1, np_ + 1) if p * q <= np_]


def matrix(rng, grid, m, n):
    """One side: a matrix holding an m x n submatrix, its offsets, grid and blocks."""
    p, q = grid
    rows = m + rng.choice([0, 0, 1, 7, 31])
    cols = n + rng.choice([0, 0, 1, 5, 23])
    i = rng.randint(1, rows - m + 1)
    j = rng.randint(1, cols - n + 1)
    nbr = rng.choice([1, 2, 3, 5, 7, 8, 13, 32, 64, rows + 3])
    nbc = rng.choice([1, 2, 3, 4, 9, 16, 17, 50, cols + 2])
    return [rows, cols, rng.randrange(p), rng.randrange(q), i, j, p, q, nbr, nbc]


def case(rng, np_, trapezoid):
    shapes = grids(np_)
    kind = rng.random()
    if kind < 0.08:
        m, n = 1, 1
    elif kind < 0.14:
        m, n = rng.choice([(0, rng.randint(1, 40)), (rng.randint(1, 40), 0)])
    elif kind < 0.9:
        m, n = rng.randint(1, 120), rng.randint(1, 120)
    else:
        m, n = rng.randint(150, 400), rng.randint(150, 400)
    a = matrix(rng, rng.choice(shapes), m, n)
    b = matrix(rng, rng.choice(shapes), m, n)
    row = [m, n] + a + b
    if trapezoid:
        row += [rng.randint(0, 1), rng.randint(0, 1)]
    return row


def main():
    kind, np_, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(f"{kind}-{np_}")
    trapezoid = kind == "trmr"
    print(f"# Conveyor's own {kind} cases for {np_} processes (tests/external/redist_inputs.py)")
    print(cases)
    # Grids of every shape first, in order, so each run covers all of them.
    rows = []
    for shape in grids(np_):
        r = case(rng, np_, trapezoid)
        m, n = r[0], r[1]
        r[2:12] = matrix(rng, shape, m, n)
        r[12:22] = matrix(rng, (shape[1], shape[0]) if shape[1] * shape[0] <= np_ else shape, m, n)
        rows.append(r)
    while len(rows) < cases:
        rows.append(case(rng, np_, trapezoid))
    for r in rows[:cases]:
        print(" ".join(f"{x:4d}" for x in r))


if __name__ == "__main__":
    main()
