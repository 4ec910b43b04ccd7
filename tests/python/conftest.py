# SPDX-License-Identifier: BSD-3-Clause
"""The communicator the Python tests run on, and the cases drawn from its size.

The tests run under mpiexec, every rank the same tests in the same order, so the
collective calls of a test meet. A test takes `comm` (MPI.COMM_WORLD; a module
may override the fixture with a communicator of its own) and reads `comm.rank`
and `comm.size`. A test that takes `bad_rank` runs once per rank: the rank that
passes the bad argument, each in turn (the collective contract, docs/api.md).
One that takes `edge_rank` runs on the first and on the last rank (one rank
holding no data). `@pytest.mark.min_ranks(n)` skips on fewer than n ranks, on
every rank alike.
"""
import pytest
from mpi4py import MPI


@pytest.fixture(scope="session")
def comm():
    return MPI.COMM_WORLD


def pytest_configure(config):
    config.addinivalue_line("markers", "min_ranks(n): skip the test on fewer than n ranks")


def pytest_generate_tests(metafunc):
    size = MPI.COMM_WORLD.Get_size()
    if "bad_rank" in metafunc.fixturenames:
        metafunc.parametrize("bad_rank", range(size))
    if "edge_rank" in metafunc.fixturenames:
        metafunc.parametrize("edge_rank", sorted({0, size - 1}))


def pytest_runtest_setup(item):
    marker = item.get_closest_marker("min_ranks")
    if marker is not None and MPI.COMM_WORLD.Get_size() < marker.args[0]:
        pytest.skip(f"needs {marker.args[0]} ranks")
