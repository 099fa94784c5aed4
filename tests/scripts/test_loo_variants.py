"""scripts/loo_variants.py: the feedback terms, the ranking of arbitrary scores and the variant
names, on literal inputs with hand-computed values (the variants themselves need the dev
indexes: `dev_history_loo.py --variants`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.scripts.script_loader import load_script

loo_variants = load_script("loo_variants")


def test_feedback_terms_weigh_share_idf_and_seed_rank():
    df = {"a": 1, "b": 5}.get    # c is not in the index
    seeds = [["a", "a", "b"], ["b", "c"]]
    # idf(a) = ln(1 + 9.5 / 1.5) = 1.99243, idf(b) = ln 2. a: 2/3 x 1.99243 = 1.328;
    # b: 1/3 x ln 2 + (1/2 x ln 2) / 2 = 0.404.
    assert loo_variants.expansion_terms(seeds, df, 10, 5) == ["a", "b"]
    assert loo_variants.expansion_terms(seeds, df, 10, 1) == ["a"]
    assert loo_variants.expansion_terms(seeds, df, 10, 5, exclude=frozenset({"a"})) == ["b"]
    assert loo_variants.expansion_terms([["y", "x"], []], lambda t: 2, 10, 5) == ["x", "y"]   # ties by term
    assert math.isclose(math.log(1 + 9.5 / 1.5), 1.99243, abs_tol=1e-5)


def test_any_scores_rank_as_the_scorer_orders_them():
    from codenib.model import localise

    col = {f: i for i, f in enumerate(localise.FEATURES)}
    X = np.zeros((3, len(localise.FEATURES)))
    X[1, col["f_test"]] = 1.0                       # a test file the report does not name
    table = localise.FeatureTable(np.array([0, 1, 2]), X, ((2, (0,)),))   # row 2 copies row 0
    ids = ["a.py::f", "tests/test_a.py::g", "copy.py::f"]
    # Scores 1, 5, 3: the test goes last however high; the copy is capped just below its source.
    assert loo_variants.rank_scores(table, ids, np.array([1.0, 5.0, 3.0])) == [
        "a.py::f", "copy.py::f", "tests/test_a.py::g"]


def test_unknown_variants_are_named_with_the_choices():
    assert loo_variants.check_names(["trees", "prf"]) == ["trees", "prf"]
    with pytest.raises(ValueError, match="unknown variant boost: choose from in_sample, prf, trees, change_proneness"):
        loo_variants.check_names(["prf", "boost"])


def test_the_script_refuses_an_unknown_variant_before_any_work(tmp_path, capsys):
    script = load_script("dev_history_loo")
    with pytest.raises(SystemExit) as exc:
        script.main(["--history", str(tmp_path / "none"), "--swebench-work", str(tmp_path / "s"),
                     "--mswe-work", str(tmp_path / "m"), "--variants", "prf,boost"])
    assert exc.value.code == 2
    assert "--variants: unknown variant boost" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
