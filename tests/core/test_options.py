"""Option metadata and its checks (`codenib.core.options`)."""

from __future__ import annotations

import dataclasses

import pytest

from codenib.batch.options import RunOptions
from codenib.core.errors import BadInputError
from codenib.core.options import option, validate_options


@dataclasses.dataclass(frozen=True)
class _Opts:
    floor_zero: int = option(5, minimum=0, help="may be 0")
    unset: int | None = option(None, minimum=1, help="a bound or nothing")
    quiet: bool = option(False, help="a plain switch")


def test_a_minimum_of_zero_is_kept_and_enforced():
    """`minimum=0` compares equal to False: it must not be dropped with the unset metadata."""
    assert dataclasses.fields(_Opts)[0].metadata["minimum"] == 0
    validate_options(_Opts(floor_zero=0))
    with pytest.raises(BadInputError, match=r"--floor-zero must be at least 0, got -1 \(fix: pass --floor-zero 5\)"):
        validate_options(_Opts(floor_zero=-1))


def test_an_option_without_a_default_value_is_not_offered_as_the_fix():
    with pytest.raises(BadInputError, match=r"--unset must be at least 1, got 0 \(fix: pass --unset 1 or more, or "
                                            r"leave it out\)"):
        validate_options(_Opts(unset=0))


def test_the_run_options_refuse_a_negative_local_below():
    with pytest.raises(BadInputError, match="--local-below must be at least 0, got -1"):
        RunOptions(queries="q.jsonl", out="out", index="idx", local_below=-1).validate()
    RunOptions(queries="q.jsonl", out="out", index="idx", local_below=0).validate()
