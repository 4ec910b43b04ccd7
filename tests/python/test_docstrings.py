# SPDX-License-Identifier: BSD-3-Clause
"""Every example in the public docstrings runs and prints what it shows
(doctest), and every public function and class has a numpydoc-style docstring."""
import doctest
import importlib
import inspect

import pytest

import conveyor
import conveyor.ot

# doctest finds a function's examples only in the module that defines it:
# conveyor re-exports one module per engine, and conveyor.ot its own functions.
ENGINE_MODULES = ("_library", "_reduce", "_collectives", "_alltoall", "_sinkhorn", "_dsop", "_redistribute")
DOCTESTED = [importlib.import_module(f"conveyor.{name}") for name in ENGINE_MODULES] + [conveyor.ot]


@pytest.mark.parametrize("module", DOCTESTED, ids=lambda m: m.__name__)
def test_examples_run(module):
    failures, tried = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert failures == 0
    assert tried > 0


def test_every_public_object_of_conveyor_is_in_a_doctested_module():
    for name in conveyor.__all__:
        obj = getattr(conveyor, name)
        if inspect.isfunction(obj):
            assert obj.__globals__["__name__"] in {m.__name__ for m in DOCTESTED}, name
        elif inspect.isclass(obj) and not name.endswith("Result"):
            assert obj.__module__ in {m.__name__ for m in DOCTESTED}, name


def public_objects():
    for module in (conveyor, conveyor.ot):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                yield f"{module.__name__}.{name}", obj


@pytest.mark.parametrize("name, obj", list(public_objects()), ids=lambda x: x if isinstance(x, str) else "")
def test_public_objects_are_documented_with_examples(name, obj):
    doc = inspect.getdoc(obj) or ""
    if name.endswith("Result"):  # the named tuples: their fields are the documentation
        return
    assert "Examples\n--------" in doc, name
    if inspect.isclass(obj):
        for member, value in vars(obj).items():
            if not member.startswith("_") and callable(getattr(value, "__func__", value)):
                assert inspect.getdoc(getattr(obj, member)), f"{name}.{member}"
