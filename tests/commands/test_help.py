"""`codenib COMMAND --help` as a user reads it: each default said once, and right; a required
option shows none; a measure name is never split across lines (issue 39 item 8)."""

from __future__ import annotations

import argparse
import dataclasses
import re

import pytest

from codenib.commands.registry import REGISTRY
from codenib.commands.cli import build_parser, main
from codenib.commands.flags import HelpFormatter
from codenib.core.options import required_keys


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _help_of(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    return " ".join(HelpFormatter(parser.prog)._expand_help(action).split()) if action.help else ""


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_default_is_said_once_and_required_options_say_none(name, capsys):
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if line.count("(default:") > 1], out
    parser = _subparsers()[name]
    for action in parser._actions:
        text = _help_of(parser, action)
        # One "(default: X)", and not beside a hand-written "default: Y".
        assert text.count("(default:") <= 1, (action.option_strings, text)
        assert not ("(default:" in text and re.search(r"(?<!\()\bdefault:", text)), (action.option_strings, text)
        assert "(default: None)" not in text and "(default: False)" not in text, (action.option_strings, text)
        if action.required:
            assert "default" not in text, (action.option_strings, text)


def test_job_options_say_their_fields_defaults_and_required_ones_say_so():
    from codenib.batch.options import RerankOptions, RunOptions

    for name, cls in (("run", RunOptions), ("rerank", RerankOptions)):
        parser = _subparsers()[name]
        by_flag = {a.option_strings[0]: _help_of(parser, a) for a in parser._actions if a.option_strings}
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for key in required_keys(cls):
            text = by_flag["--" + key.replace("_", "-")]
            assert "default" not in text and "required" in text, (name, key, text)
        for key in ("shard_size", "device"):
            assert f"(default: {fields[key].default})" in by_flag["--" + key.replace("_", "-")], (name, key)
    run = _subparsers()["run"]
    helps = {a.option_strings[0]: _help_of(run, a) for a in run._actions if a.option_strings}
    assert helps["-k"] == "results kept per query (default: 100)"
    assert helps["--budget"].endswith("(default: balanced)") and helps["--mode"].endswith("(default: auto)")
    assert helps["--rerank"] == "force a reranker (default: the budget decides)"


def test_a_measure_name_is_never_split(capsys):
    from codenib.eval.metrics import DEFAULT_MEASURES

    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    words = capsys.readouterr().out.split()
    for measure in DEFAULT_MEASURES:
        assert measure in words or measure + "," in words or measure + ")" in words, measure


def test_the_formatter_never_breaks_a_word():
    lines = HelpFormatter("x")._split_lines("comma-separated names R@1,R@5,RR@10,nDCG@10 --index-root", 12)
    assert " ".join(lines) == "comma-separated names R@1,R@5,RR@10,nDCG@10 --index-root"
