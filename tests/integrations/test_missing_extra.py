"""Without the [pyterrier] extra, the adapter says what to install."""

import importlib
import sys

import pytest

from codenib.core.errors import MissingDependencyError


def test_missing_pyterrier_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyterrier", None)   # import pyterrier -> ImportError
    monkeypatch.delitem(sys.modules, "codenib.integrations.pyterrier", raising=False)
    with pytest.raises(MissingDependencyError) as err:
        importlib.import_module("codenib.integrations.pyterrier")
    assert err.value.fix == "pip install 'codenib[pyterrier]'" and "'pyterrier'" in str(err.value)
