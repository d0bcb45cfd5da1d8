"""The examples and the package pass `mypy --strict`: the hand-written
stubs of the native module agree with how the examples use it, and the
adapters with the frameworks' own types. (Last by name: mypy runs beside
the other tests from collection on; see conftest.py.)"""

from __future__ import annotations

import conftest


def test_the_examples_and_the_package_pass_mypy_strict() -> None:
    code, out = conftest.mypy_result(timeout=600)
    assert code == 0, out
