# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.ot against POT itself (the POT installed beside it): the same plans,
losses, iteration counts, log entries and warnings on POT's own kind of test
problems; then what POT cannot do: the problem spread over ranks (`comm`)."""
import warnings

import numpy as np
import pytest

import conveyor
import conveyor.ot

ot = pytest.importorskip("ot")


def pot_problem(n=100, m=None, seed=0, dtype=np.float64):
    """Random points in the plane, squared distances, uniform histograms (POT's tests' kind)."""
    rng = np.random.RandomState(seed)
    m = n if m is None else m
    x, y = rng.randn(n, 2), rng.randn(m, 2)
    M = ot.dist(x, y).astype(dtype)
    return ot.unif(n).astype(dtype), ot.unif(m).astype(dtype), M


def caught(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, [x for x in w if issubclass(x.category, UserWarning)]


@pytest.mark.parametrize("method", ["sinkhorn", "sinkhorn_log"])
@pytest.mark.parametrize("reg, numItermax", [(1.0, 1000), (0.5, 1000), (0.05, 1000), (0.05, 15)])
def test_plan_and_log_equal_pots(method, reg, numItermax):
    a, b, M = pot_problem(60, 45, seed=3)
    M /= M.max()
    (P, log), warned = caught(conveyor.ot.sinkhorn, a, b, M, reg, method=method, numItermax=numItermax, log=True)
    (P_pot, log_pot), warned_pot = caught(ot.sinkhorn, a, b, M, reg, method=method, numItermax=numItermax, log=True)
    assert log["niter"] == log_pot["niter"]
    np.testing.assert_allclose(P, P_pot, rtol=1e-10, atol=0)
    assert set(log_pot) <= set(log), sorted(set(log_pot) - set(log))
    np.testing.assert_allclose(log["err"], log_pot["err"], rtol=1e-6, atol=1e-15)
    for key in ("u", "v", "log_u", "log_v"):
        if key in log_pot:
            np.testing.assert_allclose(log[key], log_pot[key], rtol=1e-9, atol=1e-12, err_msg=key)
    # Not converged (15 iterations) warns, like POT; converged does not.
    assert bool(warned) == bool(warned_pot) == (numItermax == 15)


@pytest.mark.parametrize("method", ["sinkhorn", "sinkhorn_log"])
def test_loss_and_several_histograms_equal_pots(method):
    a, b, M = pot_problem(50, 40, seed=1)
    M /= M.max()
    W = conveyor.ot.sinkhorn2(a, b, M, 0.2, method=method)
    assert W == pytest.approx(ot.sinkhorn2(a, b, M, 0.2, method=method), rel=1e-10)
    rng = np.random.RandomState(5)
    B = rng.rand(40, 3)
    B /= B.sum(axis=0)
    losses = conveyor.ot.sinkhorn2(a, B, M, 0.2, method=method)
    single = [conveyor.ot.sinkhorn2(a, B[:, k].copy(), M, 0.2, method=method) for k in range(3)]
    np.testing.assert_allclose(losses, single, rtol=1e-12)
    np.testing.assert_allclose(losses, ot.sinkhorn2(a, B, M, 0.2, method=method), rtol=1e-7)
    losses, log = conveyor.ot.sinkhorn(a, B, M, 0.2, method=method, log=True)
    assert log["u"].shape == (50, 3) and log["v"].shape == (40, 3)


def test_float32_stays_float32_and_matches_pot():
    a, b, M = pot_problem(40, 30, seed=2, dtype=np.float32)
    M /= M.max()
    P = conveyor.ot.sinkhorn(a, b, M, 0.5, stopThr=1e-6)
    assert P.dtype == np.float32
    np.testing.assert_allclose(P, ot.sinkhorn(a, b, M, 0.5, stopThr=1e-6), rtol=2e-4, atol=1e-9)


def test_jax_arrays_come_back_as_jax_arrays():
    """Another library's arrays (through POT's backend): the results are that
    library's arrays, of M's dtype, equal to the NumPy call's. JAX is installed
    in scripts/test's pip venvs (tests/python/installed_package.sh); Debian's
    python3 used by CTest has none (and POT 0.8.2), so there it is skipped."""
    jnp = pytest.importorskip("jax.numpy")
    a, b, M = pot_problem(30, 20, seed=6, dtype=np.float32)
    M /= M.max()
    aj, bj, Mj = jnp.asarray(a), jnp.asarray(b), jnp.asarray(M)
    P, log = conveyor.ot.sinkhorn(aj, bj, Mj, 0.5, stopThr=1e-6, log=True)
    P_np, log_np = conveyor.ot.sinkhorn(a, b, M, 0.5, stopThr=1e-6, log=True)
    assert type(P) is type(Mj) and P.dtype == jnp.float32 and P.shape == (30, 20)
    np.testing.assert_array_equal(np.asarray(P), P_np)
    assert type(log["u"]) is type(Mj) and log["niter"] == log_np["niter"]
    np.testing.assert_array_equal(np.asarray(log["v"]), log_np["v"])
    W = conveyor.ot.sinkhorn2(aj, bj, Mj, 0.5, method="sinkhorn_log")
    assert type(W) is type(Mj) and float(W) == pytest.approx(conveyor.ot.sinkhorn2(a, b, M, 0.5, method="sinkhorn_log"))
    # A warm start given as JAX arrays, a list beside a JAX M.
    P_warm = conveyor.ot.sinkhorn(list(a), bj, Mj, 0.5, stopThr=1e-6, warmstart=(jnp.log(log["u"]), jnp.log(log["v"])))
    np.testing.assert_allclose(np.asarray(P_warm), P_np, rtol=1e-5, atol=1e-9)


def test_empty_histograms_mean_uniform_and_lists_are_accepted():
    _, _, M = pot_problem(20, 10, seed=4)
    P = conveyor.ot.sinkhorn([], [], M.tolist(), 1.0)
    np.testing.assert_allclose(P, ot.sinkhorn([], [], M, 1.0), rtol=1e-10)


def test_methods_conveyor_does_not_implement_raise_and_name_themselves():
    a, b, M = pot_problem(5)
    for method in ("greenkhorn", "sinkhorn_stabilized", "sinkhorn_epsilon_scaling"):
        with pytest.raises(NotImplementedError, match=method):
            conveyor.ot.sinkhorn(a, b, M, 1.0, method=method)
    with pytest.raises(ValueError, match="Unknown method"):
        conveyor.ot.sinkhorn(a, b, M, 1.0, method="no_such_method")


def test_warmstart_from_a_solution_stops_at_the_first_test():
    a, b, M = pot_problem(30, seed=6)
    M /= M.max()
    for method in ("sinkhorn", "sinkhorn_log"):
        P, log = conveyor.ot.sinkhorn(a, b, M, 0.3, method=method, log=True, stopThr=1e-12)
        assert log["niter"] > 0
        start = (log["log_u"], log["log_v"]) if method == "sinkhorn_log" else (np.log(log["u"]), np.log(log["v"]))
        P2, log2 = conveyor.ot.sinkhorn(a, b, M, 0.3, method=method, log=True, stopThr=1e-12, warmstart=start)
        assert log2["niter"] == 0, method
        np.testing.assert_allclose(P2, P, rtol=1e-9, atol=1e-15)


def test_numerical_failure_warns():
    a, b, M = pot_problem(20, seed=7)
    M = 1.0 + M / M.max()  # exp(-M / reg) underflows to 0 everywhere
    with pytest.warns(UserWarning, match="numerical errors") as record:
        conveyor.ot.sinkhorn(a, b, M, 1e-3)
    assert record[0].filename == __file__  # the warning names the caller's line, as POT's


@pytest.mark.parametrize("histograms", [1, 2])
def test_warnings_name_the_callers_line(histograms):
    a, b, M = pot_problem(20, seed=9)
    B = b if histograms == 1 else np.stack([b] * histograms, axis=1)
    with pytest.warns(UserWarning, match="did not converge") as record:
        conveyor.ot.sinkhorn(a, B, M / M.max(), 0.05, numItermax=5)
    assert [w.filename for w in record] == [__file__] * histograms


@pytest.mark.parametrize("method", ["sinkhorn", "sinkhorn_log"])
def test_rows_spread_over_ranks_give_the_single_process_plan(comm, method):
    a, b, M = pot_problem(37, 23, seed=8)
    M /= M.max()
    first, rows = conveyor.balanced_rows(37, comm)
    P_rows, log = conveyor.ot.sinkhorn(a[first:first + rows], b, M[first:first + rows], 0.2, method=method,
                                       comm=comm, log=True)
    P, log1 = conveyor.ot.sinkhorn(a, b, M, 0.2, method=method, log=True)
    assert log["niter"] == log1["niter"]
    np.testing.assert_allclose(P_rows, P[first:first + rows], rtol=1e-11, atol=1e-300)
    W = conveyor.ot.sinkhorn2(a[first:first + rows], b, M[first:first + rows], 0.2, method=method, comm=comm)
    assert W == pytest.approx(conveyor.ot.sinkhorn2(a, b, M, 0.2, method=method), rel=1e-11)
    # Empty a: uniform over all ranks' rows.
    P_uniform = conveyor.ot.sinkhorn([], b, M[first:first + rows], 0.2, method=method, comm=comm)
    np.testing.assert_allclose(P_uniform, P[first:first + rows], rtol=1e-11, atol=1e-300)


def test_a_bad_argument_on_one_rank_raises_on_every_rank(comm, bad_rank):
    a, b, M = pot_problem(4 * comm.size, 6, seed=9)
    first, rows = conveyor.balanced_rows(4 * comm.size, comm)
    mine = M[first:first + rows]
    cases = [  # (what this rank passes if it is the bad one, the error every rank must raise)
        (dict(M=mine.ravel()), ValueError, "M must be 2-D"),
        (dict(method="greenkhorn"), NotImplementedError, "greenkhorn"),
        (dict(method="sinkhorn_log"), ValueError, "different methods"),
        (dict(M=[["x"]]), ValueError, f"rank {bad_rank}"),
    ]
    for override, error, message in cases:
        args = dict(M=mine, method="sinkhorn")
        if comm.rank == bad_rank:
            args.update(override)
        if comm.size == 1 and error is ValueError and "different" in message:
            continue  # one rank cannot disagree with itself
        with pytest.raises(error, match=message):
            conveyor.ot.sinkhorn(a[first:first + rows], b, args["M"], 0.5, method=args["method"], comm=comm)
    # The communicator is still usable: a good call after the bad ones.
    P = conveyor.ot.sinkhorn(a[first:first + rows], b, mine, 0.5, comm=comm)
    assert P.shape == mine.shape
