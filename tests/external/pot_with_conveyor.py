# SPDX-License-Identifier: BSD-3-Clause
"""A pytest plugin that runs POT's own Bregman / Sinkhorn tests with conveyor.ot
in place of POT's Sinkhorn (tests/external/pot_tests.sh loads it with -p).

1. Substitution: ot.sinkhorn, ot.sinkhorn2 and their ot.bregman names become
   dispatchers: the methods Conveyor implements (conveyor.ot.IMPLEMENTED_METHODS)
   go to conveyor.ot, the others to POT's own function, so a test mixing
   methods still checks Conveyor on its share; the same for
   ot.bregman.empirical_sinkhorn / empirical_sinkhorn2 by metric
   (conveyor.ot.METRICS), and empirical_sinkhorn_divergence; and ot.sinkhorn_unbalanced,
   sinkhorn_unbalanced2 (also as ot.unbalanced.*) by method
   (conveyor.ot.UNBALANCED_METHODS); ot.bregman.barycenter (also as ot.barycenter) by
   method (conveyor.ot.BARYCENTER_METHODS) and
   ot.bregman.free_support_sinkhorn_barycenter; ot.solve and ot.solve_sample (POT >= 0.9)
   for the problems conveyor.ot.solve implements (entropic, KL or entropy, balanced
   or with KL marginals, no reference measure, POT's default method; solve_sample also by metric). Each
   test's calls into Conveyor are counted.
2. What POT's test modules take from POT's repository-level conftest.py, which
   its source distribution leaves out: the `nx` fixture (one run per backend
   POT finds installed), the decorators pytest.skip_backend(name) and
   pytest.skip_arg(names, values, reason, getter), and JAX in 64-bit mode (without
   it POT's JAX runs compute in float32 and POT itself fails 17 of them). Written
   here from how the tests use them.
3. The verdict, one line per test at the end: "conveyor" (passed, Conveyor
   called), "pot-only" (passed without calling Conveyor: the test exercises
   other POT functions, or only methods Conveyor does not implement),
   "deviation" (failed, and the test is listed in KNOWN_DEVIATIONS with the
   reason), "skipped" (by POT itself), or "FAILED". The session fails if any test FAILED or if no test
   called Conveyor.
"""
import functools

import pytest

import conveyor.ot
from outside_verdicts import fail_if_never_called, record, write_summary
from conveyor.ot._solve import GRAD_MODES
import ot
from ot.backend import get_backend_list

# Tests whose expectations Conveyor does not meet on purpose, with the reason.
KNOWN_DEVIATIONS = {
    "test_nan_warning[sinkhorn]": "reg=0: POT returns a NaN plan with a warning; Conveyor raises ValueError "
                                  "(eps must be > 0) before iterating",
}
# POT's log-domain barycenter raises NotImplementedError for JAX arrays (a POT
# limitation the tests check for); Conveyor computes it on NumPy copies.
KNOWN_DEVIATIONS.update({
    f"{test}[jax-sinkhorn_log-{verbose}-{warn}]": "POT raises NotImplementedError for JAX in the log domain; "
                                                  "Conveyor returns the barycenter"
    for test in ("test_barycenter", "test_barycenter_assymetric_cost")
    for verbose in (True, False) for warn in (True, False)})

# Tests that fail with POT alone, for a reason outside Conveyor (listed with it;
# they count as pot-only): POT 0.9.5's source distribution ships no unbalanced
# tests, so pot_tests.sh runs 0.9.4's test_unbalanced.py against POT 0.9.5.
POT_ONLY_FAILURES = {
    "test_mm_wrong_divergence[numpy]": "POT 0.9.4's test of POT's own MM solver: POT 0.9.5 words the error "
                                       "differently ('Unknown div'); Conveyor not called",
    "test_mm_wrong_divergence[jax]": "as test_mm_wrong_divergence[numpy]",
}

_calls = {"current": 0}
_verdicts = {}


def _dispatcher(pot_function, conveyor_function):
    @functools.wraps(pot_function)
    def call(a, b, M, reg, method="sinkhorn", *args, **kwargs):
        if str(method).lower() in conveyor.ot.IMPLEMENTED_METHODS:
            _calls["current"] += 1
            return conveyor_function(a, b, M, reg, method, *args, **kwargs)
        if str(method).lower() not in ("greenkhorn", "sinkhorn_stabilized", "sinkhorn_epsilon_scaling"):
            # An unknown method: Conveyor's own check (ValueError, as POT's).
            _calls["current"] += 1
            return conveyor_function(a, b, M, reg, method, *args, **kwargs)
        return pot_function(a, b, M, reg, method, *args, **kwargs)

    return call


def _points_dispatcher(pot_function, conveyor_function):
    @functools.wraps(pot_function)
    def call(X_s, X_t, reg, a=None, b=None, metric="sqeuclidean", *args, **kwargs):
        if str(metric).lower() in conveyor.ot.METRICS:
            _calls["current"] += 1
            return conveyor_function(X_s, X_t, reg, a, b, metric, *args, **kwargs)
        return pot_function(X_s, X_t, reg, a, b, metric, *args, **kwargs)

    return call


def _unbalanced_dispatcher(pot_function, conveyor_function):
    @functools.wraps(pot_function)
    def call(a, b, M, reg, reg_m, method="sinkhorn", *args, **kwargs):
        if str(method).lower() in conveyor.ot.UNBALANCED_METHODS:
            _calls["current"] += 1
            return conveyor_function(a, b, M, reg, reg_m, method, *args, **kwargs)
        return pot_function(a, b, M, reg, reg_m, method, *args, **kwargs)

    return call


def _barycenter_dispatcher(pot_function):
    @functools.wraps(pot_function)
    def call(A, M, reg, weights=None, method="sinkhorn", *args, **kwargs):
        if str(method).lower() in _POT_ONLY_BARYCENTER_METHODS:
            return pot_function(A, M, reg, weights, method, *args, **kwargs)
        _calls["current"] += 1  # (an unknown method: Conveyor's own check, ValueError as POT's)
        return conveyor.ot.barycenter(A, M, reg, weights, method, *args, **kwargs)

    return call


_POT_ONLY_BARYCENTER_METHODS = ("sinkhorn_stabilized",)


def _entropic_between_histograms(reg=None, c=None, reg_type="KL", unbalanced=None, unbalanced_type="KL",
                                  method=None, lazy=False, **_):
    """Whether an ot.solve / ot.solve_sample call is a problem conveyor.ot.solve
    implements (entropic, KL or entropy, balanced or with KL marginals and
    reg_type KL (not lazy), no reference measure, POT's default method); the
    others stay POT's."""
    import numpy as np
    if reg is None or isinstance(reg_type, tuple) or str(reg_type).lower() not in ("kl", "entropy"):
        return False
    try:
        if float(reg) <= 0:
            return False
    except TypeError:
        return False
    balanced = unbalanced is None or bool(np.all(np.isinf(np.asarray(unbalanced, dtype=float))))
    kl_marginals = str(unbalanced_type).lower() == "kl" and str(reg_type).lower() == "kl" and not lazy
    return c is None and (balanced or kl_marginals) and method is None


_SOLVE_ARGS = ("a", "b", "reg", "c", "reg_type", "unbalanced", "unbalanced_type", "method", "n_threads",
               "max_iter", "plan_init", "potentials_init", "tol", "verbose", "grad")
_SOLVE_SAMPLE_ARGS = ("a", "b", "metric", "reg", "c", "reg_type", "unbalanced", "unbalanced_type", "lazy",
                      "batch_size", "method", "n_threads", "max_iter", "plan_init", "rank", "scaling",
                      "potentials_init", "X_init", "tol", "verbose", "grad")


def _solve_dispatcher(pot_function):
    @functools.wraps(pot_function)
    def call(M, *args, **kwargs):
        named = dict(zip(_SOLVE_ARGS, args), **kwargs)
        if _entropic_between_histograms(**named) and named.get("grad", "autodiff") in GRAD_MODES:
            _calls["current"] += 1
            return conveyor.ot.solve(M, **named)
        return pot_function(M, *args, **kwargs)

    return call


def _solve_sample_dispatcher(pot_function):
    @functools.wraps(pot_function)
    def call(X_a, X_b, *args, **kwargs):
        named = dict(zip(_SOLVE_SAMPLE_ARGS, args), **kwargs)
        metric = str(named.get("metric", "sqeuclidean")).lower()
        lazy = bool(named.get("lazy", False))
        ok = metric in conveyor.ot.METRICS and (not lazy or str(named.get("reg_type", "KL")).lower() == "kl")
        if ok and _entropic_between_histograms(**named):
            _calls["current"] += 1
            return conveyor.ot.solve_sample(X_a, X_b, **named)
        return pot_function(X_a, X_b, *args, **kwargs)

    return call


def _counted(conveyor_function):
    @functools.wraps(conveyor_function)
    def call(*args, **kwargs):
        _calls["current"] += 1
        return conveyor_function(*args, **kwargs)

    return call


def _substitute():
    for module in (ot, ot.bregman):
        module.sinkhorn = _dispatcher(module.sinkhorn, conveyor.ot.sinkhorn)
        module.sinkhorn2 = _dispatcher(module.sinkhorn2, conveyor.ot.sinkhorn2)
    # The point-cloud solvers, also where POT's own empirical_sinkhorn_divergence
    # finds them (its module's globals), so the divergence runs on Conveyor's.
    modules = [ot.bregman]
    try:  # POT >= 0.9 (a package); before, ot.bregman's globals are the ones
        import ot.bregman._empirical as empirical
        modules.append(empirical)
    except ImportError:
        pass
    for module in modules:
        module.empirical_sinkhorn = _points_dispatcher(module.empirical_sinkhorn, conveyor.ot.empirical_sinkhorn)
        module.empirical_sinkhorn2 = _points_dispatcher(module.empirical_sinkhorn2, conveyor.ot.empirical_sinkhorn2)
        module.empirical_sinkhorn_divergence = _points_dispatcher(module.empirical_sinkhorn_divergence,
                                                                  conveyor.ot.empirical_sinkhorn_divergence)
    for module in (ot, ot.bregman):
        if hasattr(module, "barycenter"):
            module.barycenter = _barycenter_dispatcher(module.barycenter)
    if hasattr(ot.bregman, "free_support_sinkhorn_barycenter"):  # (POT >= 0.9)
        ot.bregman.free_support_sinkhorn_barycenter = _counted(conveyor.ot.free_support_sinkhorn_barycenter)
    for module in (ot, ot.unbalanced):
        module.sinkhorn_unbalanced = _unbalanced_dispatcher(module.sinkhorn_unbalanced,
                                                            conveyor.ot.sinkhorn_unbalanced)
        module.sinkhorn_unbalanced2 = _unbalanced_dispatcher(module.sinkhorn_unbalanced2,
                                                             conveyor.ot.sinkhorn_unbalanced2)
    if hasattr(ot, "solve"):  # POT >= 0.9: its unified entry points
        ot.solve = _solve_dispatcher(ot.solve)
    if hasattr(ot, "solve_sample"):
        ot.solve_sample = _solve_sample_dispatcher(ot.solve_sample)


def _skip_backend(name, reason=None):
    """Skips the test's runs whose `nx` backend is `name`."""
    def mark(test):
        return pytest.mark.conveyor_skip_backend(name, reason or f"{name} backend skipped by the test")(test)
    return mark


def _skip_arg(names, values, reason=None, getter=lambda x: x):
    """Skips the test's runs whose parameters `names` equal `values` (each
    parameter passed through getter first)."""
    if isinstance(names, str):
        names, values = (names,), (values,)
    def mark(test):
        return pytest.mark.conveyor_skip_arg(tuple(names), tuple(values), reason, getter)(test)
    return mark


def pytest_configure(config):
    from ot.backend import jax
    if jax:  # as POT's conftest: its JAX runs compare float64 results
        jax.config.update("jax_enable_x64", True)
    pytest.skip_backend = _skip_backend
    pytest.skip_arg = _skip_arg
    config.addinivalue_line("markers", "conveyor_skip_backend(name, reason): see pot_with_conveyor.py")
    config.addinivalue_line("markers", "conveyor_skip_arg(names, values, reason, getter): see pot_with_conveyor.py")
    _substitute()


def pytest_generate_tests(metafunc):
    if "nx" in metafunc.fixturenames:
        # One run per backend POT finds (NumPy, and JAX / PyTorch / ... where
        # installed): conveyor.ot hands other libraries' arrays back as theirs.
        metafunc.parametrize("nx", [pytest.param(b, id=b.__name__) for b in get_backend_list()])


def pytest_runtest_setup(item):
    params = getattr(getattr(item, "callspec", None), "params", {})
    nx = params.get("nx")
    for m in item.iter_markers("conveyor_skip_backend"):
        if nx is not None and nx.__name__ == m.args[0]:
            pytest.skip(m.args[1])
    for m in item.iter_markers("conveyor_skip_arg"):
        names, values, reason, getter = m.args
        if all(n in params for n in names) and tuple(getter(params[n]) for n in names) == values:
            pytest.skip(reason or f"{names} = {values} skipped by the test")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _calls["current"] = 0
    yield
    item.conveyor_calls = _calls["current"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call":
        if report.when == "setup" and report.skipped:
            reason = str(report.longrepr[-1]) if report.longrepr else ""
            _verdicts[item.nodeid] = ("skipped", reason)
        return
    record(item, report, _verdicts, "POT", _pot_alone, KNOWN_DEVIATIONS)


def _pot_alone(name, report, calls):
    return POT_ONLY_FAILURES.get(name) if not calls else None


def pytest_terminal_summary(terminalreporter):
    write_summary(terminalreporter, _verdicts, "POT's tests with conveyor.ot (verdict per test):",
                  "POT with conveyor.ot", 9)


def pytest_sessionfinish(session, exitstatus):
    fail_if_never_called(session, _verdicts)
