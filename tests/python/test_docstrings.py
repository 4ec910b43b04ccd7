# SPDX-License-Identifier: BSD-3-Clause
"""Every example in the public docstrings runs and prints what it shows
(doctest), and every public function and class has a numpydoc-style docstring."""
import doctest
import inspect

import pytest

import conveyor
import conveyor.ot


@pytest.mark.parametrize("module", [conveyor, conveyor.ot], ids=lambda m: m.__name__)
def test_examples_run(module):
    failures, tried = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert failures == 0
    assert tried > 0


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
