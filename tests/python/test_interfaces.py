# SPDX-License-Identifier: BSD-3-Clause
"""One vocabulary across C++, C and Python (issue: "every option of every engine
reaches all three interfaces").

1. Every name of every list in include/conveyor/enums.h (which generates the C
   constants and the C++ enums and names) is accepted by the Python call that
   takes it, and comes back where the call reports it.
2. Every field of every C++ options struct (read from the public headers) is a
   field of the C struct and a keyword of the Python function of that engine, by
   the same name, except the few listed below with the reason. Nested structs are
   flattened: the inner allreduce of Sinkhorn and DSOP as allreduce_algorithm and
   ranks_per_node, Sinkhorn's blocking as mc, nc, mr, nr.
The headers are parsed as text, so a field added to one interface only fails here.
"""
import inspect
import pathlib
import re

import numpy as np
import pytest
from mpi4py import MPI

import conveyor

INCLUDE = pathlib.Path(__file__).resolve().parents[2] / "include" / "conveyor"


def enum_lists():
    """{list macro: [(C suffix, C++ enumerator, name)]} from enums.h."""
    text = (INCLUDE / "enums.h").read_text()
    lists = {}
    for m in re.finditer(r"#define (CONVEYOR_\w+_LIST)\(X\)((?:[^\n]*\\\n)*[^\n]*)", text):
        lists[m.group(1)] = re.findall(r'X\((\w+),\s*(\w+),\s*"(\w+)"\)', m.group(2))
    return lists


LISTS = enum_lists()


def names(macro):
    return [name for _, _, name in LISTS[macro]]


def test_every_list_is_parsed():
    assert len(LISTS) == 14, sorted(LISTS)
    for macro, entries in LISTS.items():
        assert entries, macro


# --- 1. enum names -----------------------------------------------------------------
def test_ops_and_dtypes_reach_python():
    for op in names("CONVEYOR_OP_LIST"):
        a = np.arange(1, 6, dtype=np.float64 if op == "logaddexp" else np.int32)  # logaddexp: floats only
        conveyor.reduce_local(a.copy(), a, op)
    for name in names("CONVEYOR_DTYPE_LIST"):
        if name == "bfloat16":
            continue  # NumPy has no bfloat16 (issue 15: through DLPack)
        a = np.ones(3, dtype=np.dtype(name))
        conveyor.reduce_local(a.copy(), a, "sum")


def test_allreduce_algorithms_reach_python(comm):
    for name in names("CONVEYOR_ALLREDUCE_ALGORITHM_LIST"):
        out = conveyor.allreduce(np.ones(100), algorithm=name)
        assert np.all(out == comm.size), name


def test_sinkhorn_variants_and_statuses_reach_python(comm):
    rng = np.random.default_rng(7)
    first, rows = conveyor.balanced_rows(12, comm)
    A = rng.random((12, 9))[first:first + rows] + 0.1
    r, c = np.full(rows, 9 / 12), np.ones(9)
    statuses = set(names("CONVEYOR_SINKHORN_STATUS_LIST"))
    for name in names("CONVEYOR_SINKHORN_VARIANT_LIST"):
        in_place = name != "fused"
        res = conveyor.sinkhorn_scale(A.copy(), r, c, in_place=in_place, variant=name, mc=4, nc=5, mr=2, nr=2)
        assert res.status == "converged", name
        assert res.status in statuses
    res = conveyor.sinkhorn_scale(A, r, c, max_iter=1)
    assert res.status == "max_iter"
    for norm in names("CONVEYOR_SINKHORN_NORM_LIST"):
        res = conveyor.sinkhorn_scale(A, r, c, norm=norm, tol=1e-12)
        assert res.status == "converged" and res.error <= 1e-12, norm


def test_unbalanced_reg_types_and_stop_rules_reach_python():
    C = np.array([[0.0, 1.0], [1.0, 0.0]])
    a, b = np.array([0.5, 0.5]), np.array([0.3, 0.3])
    X = np.array([[0.0], [1.0]])
    for reg_type in names("CONVEYOR_SINKHORN_REG_TYPE_LIST"):
        for stop in names("CONVEYOR_SINKHORN_STOP_LIST"):
            dense = conveyor.sinkhorn_transport(C, a, b, 0.1, MPI.COMM_SELF, reg_m_rows=1.0, reg_m_cols=1.0,
                                                reg_type=reg_type, stop=stop, tol=1e-10, max_iter=3000)
            points = conveyor.sinkhorn_points(X, X, 0.1, a, b, MPI.COMM_SELF, reg_m_rows=1.0, reg_m_cols=1.0,
                                              reg_type=reg_type, stop=stop, tol=1e-10, max_iter=3000)
            # The marginal rule cannot be met (b holds less mass): max_iter; the change rule converges.
            want = "converged" if stop == "change" else "max_iter"
            assert dense.status == points.status == want, (reg_type, stop)


def test_point_cloud_metrics_reach_python():
    X = np.array([[0.0, 0.0], [3.0, 4.0]])
    costs = {}
    for name in names("CONVEYOR_POINTS_METRIC_LIST"):
        res = conveyor.sinkhorn_points(X, X, 0.01, metric=name, comm=MPI.COMM_SELF)
        assert res.status == "converged", name
        costs[name] = res.cost
    assert costs == pytest.approx({"sqeuclidean": 0.0, "euclidean": 0.0}, abs=1e-12)
    far = {name: conveyor.sinkhorn_points(X[:1], X[1:], 0.01, metric=name, comm=MPI.COMM_SELF).cost
           for name in names("CONVEYOR_POINTS_METRIC_LIST")}
    assert far == pytest.approx({"sqeuclidean": 25.0, "euclidean": 5.0})
    exchanged = {name: conveyor.sinkhorn_points(X, X + 0.5, 0.1, exchange=name).cost
                 for name in names("CONVEYOR_POINTS_EXCHANGE_LIST")}
    assert len(set(exchanged.values())) == 1, exchanged  # the same bits every way


def test_outer_algorithms_and_orders_reach_python(comm):
    a, b = np.arange(1.0, 6.0), np.arange(1.0, 4.0)
    for name in names("CONVEYOR_OUTER_ALGORITHM_LIST"):
        np.testing.assert_allclose(conveyor.outer_sum(a, b, algorithm=name), comm.size * np.outer(a, b), err_msg=name)
    for name in names("CONVEYOR_MATRIX_ORDER_LIST"):
        G = conveyor.outer_sum(a, b, order=name)
        np.testing.assert_allclose(G, comm.size * np.outer(a, b), err_msg=name)
        assert G.flags["F_CONTIGUOUS" if name == "column_major" else "C_CONTIGUOUS"], name
    first, rows = conveyor.outer_rows(len(a), comm)
    G = conveyor.outer_sum(a, b, distributed=True, order="column_major")
    np.testing.assert_allclose(G, comm.size * np.outer(a, b)[first:first + rows])


def plan_between_layouts(comm, node_memory=False, **options):
    n, m = 4 * comm.size, 2 * comm.size  # rows to columns: 4 rows, then 2 columns per rank
    whole = np.arange(n * m, dtype=np.float64).reshape(n, m)
    src = conveyor.Layout.cartesian((n, m), (comm.size, 1), whole[comm.rank * 4:(comm.rank + 1) * 4].copy(), comm)
    out = conveyor.empty((n, 2)) if node_memory else np.zeros((n, 2))
    dst = conveyor.Layout.cartesian((n, m), (1, comm.size), out, comm)
    plan = conveyor.Plan(src, dst, **options)
    plan.execute()
    np.testing.assert_array_equal(dst.local, whole[:, comm.rank * 2:(comm.rank + 1) * 2])
    return plan, dst


def test_transports_and_relabelings_reach_python(comm):
    for name in names("CONVEYOR_TRANSPORT_LIST"):
        # one_copy needs node memory (conveyor.empty) on one node
        plan, _ = plan_between_layouts(comm, transport=name, node_memory=name == "one_copy")
        assert plan.transport == name or name == "auto", name
    for name in names("CONVEYOR_RELABELING_LIST"):
        plan, _ = plan_between_layouts(comm, relabel=name, intra_node_cost=0.5, ranks_per_node=1, chunk_bytes=64)
        assert sorted(plan.sigma) == list(range(comm.size)), name


def test_unknown_names_and_options_are_errors(comm):
    with pytest.raises(ValueError, match="unknown transport 'fast'"):
        plan_between_layouts(comm, transport="fast")
    with pytest.raises(ValueError, match="unknown matrix order"):
        conveyor.outer_sum(np.ones(2), np.ones(2), order="diagonal")


# --- 2. options -----------------------------------------------------------------------
def cpp_fields(header, struct):
    """The data members of a C++ struct in a public header (functions skipped)."""
    text = (INCLUDE / header).read_text()
    body = re.search(r"struct %s \{(.*?)\n\};" % struct, text, re.S).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    fields = []
    for decl in body.split(";"):
        decl = re.sub(r"std::function<[^>]*>", "function", decl.strip())
        decl = re.sub(r"=[^,]*", "", decl)  # initializers
        if not decl or "(" in decl:
            continue  # a member function
        # "double alpha_imag = 0, beta_imag = 0" -> both names
        for part in re.split(r",(?![^<]*>)", decl):
            fields.append(re.findall(r"\w+", part)[-1])
    return fields


def c_fields(struct):
    text = "".join(path.read_text() for path in [INCLUDE / "conveyor.h", *sorted((INCLUDE / "c").glob("*.h"))])
    body = re.search(r"typedef struct %s \{(.*?)\}" % struct, text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    fields = []
    for decl in body.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        if "(" in decl:  # a function pointer: void (*on_chunk)(...)
            fields.append(re.search(r"\(\s*\*\s*(\w+)\s*\)", decl).group(1))
            continue
        head, *rest = decl.split(",")
        fields.append(re.findall(r"\w+", head)[-1])
        fields += [r.strip().lstrip("*") for r in rest]
    return fields


def flatten(fields, nested):
    out = []
    for f in fields:
        out += nested.get(f, [f])
    return out


INNER_ALLREDUCE = ["allreduce_algorithm", "ranks_per_node"]
# Options of the inner allreduce that only C++ passes on (the front ends use the
# engine's defaults for its segment size, deterministic order, validation and
# chunk callback).
INNER_ONLY_CPP = "inner allreduce tuning: C++ only"

ENGINES = {
    # engine: (C++ header, struct, nested, C struct, Python functions, {name: reason})
    "allreduce": ("collectives.hpp", "allreduce_options", {}, "conveyor_allreduce_options", [conveyor.allreduce],
                  {"on_chunk": "a callback per chunk, inside the collective: C++ and C only"}),
    "sinkhorn": ("sinkhorn.hpp", "options", {"block": ["mc", "nc", "mr", "nr"], "allreduce": INNER_ALLREDUCE},
                 "conveyor_sinkhorn_options", [conveyor.sinkhorn_scale, conveyor.sinkhorn_transport], {}),
    "points": ("sinkhorn_points.hpp", "points_options", {}, "conveyor_points_options", [conveyor.sinkhorn_points], {}),
    "plan_apply": ("sinkhorn_points.hpp", "plan_apply_options", {}, "conveyor_plan_apply_options",
                   [conveyor.apply_plan_points], {"batch": "Python: the arrays' shape, (B, n, dim) clouds"}),
    "barycenter": ("sinkhorn_barycenter.hpp", "barycenter_options", {"allreduce": INNER_ALLREDUCE},
                   "conveyor_barycenter_options", [conveyor.sinkhorn_barycenter], {}),
    "outer": ("dsop.hpp", "outer_options", {"allreduce": INNER_ALLREDUCE}, "conveyor_outer_options",
              [conveyor.outer_sum], {}),
    "redistribute": ("redistribute.hpp", "plan_options", {}, "conveyor_redistribute_options", [conveyor.Plan], {}),
    "transform": ("redistribute.hpp", "transform", {}, "conveyor_transform", [conveyor.Plan],
                  {"type": "Python: the arrays' dtype", "alpha_imag": "Python: a complex alpha",
                   "beta_imag": "Python: a complex beta"}),
}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_option_reaches_c_and_python(engine):
    header, struct, nested, c_struct, functions, python_reasons = ENGINES[engine]
    cpp = flatten(cpp_fields(header, struct), nested)
    assert cpp, engine
    c = set(c_fields(c_struct))
    python = set()
    for f in functions:
        python |= set(inspect.signature(f).parameters)
    missing_c = [f for f in cpp if f not in c]
    missing_python = [f for f in cpp if f not in python and f not in python_reasons and f not in ("src", "dst")]
    assert not missing_c, f"{engine}: C++ options missing in {c_struct}: {missing_c}"
    assert not missing_python, f"{engine}: C++ options missing in Python: {missing_python}"
    extra_c = c - set(cpp) - {"user_data"}  # user_data: on_chunk's argument in C
    assert not extra_c, f"{engine}: C fields without a C++ option: {sorted(extra_c)}"


def test_the_parser_sees_nested_and_listed_fields():
    assert cpp_fields("redistribute.hpp", "transform") == ["src", "dst", "perm", "conjugate", "alpha", "beta",
                                                           "alpha_imag", "beta_imag", "type"]
    assert "mc" in c_fields("conveyor_sinkhorn_options") and "nr" in c_fields("conveyor_sinkhorn_options")
    assert "on_chunk" in c_fields("conveyor_allreduce_options")
