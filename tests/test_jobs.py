"""Job specs: every `codenib run` / `codenib rerank` option, overrides, and clear errors."""

import pytest

from codenib.core.errors import BadInputError
from codenib.commands.jobs import load_job_spec, rerank_options, run_options
from codenib.engines.llm.client import LLMConfig


def write(tmp_path, text, name="job.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_run_section_maps_to_run_options_and_cli_overrides_win(tmp_path):
    spec = load_job_spec(write(tmp_path, """
[run]
queries = "q.parquet"
index_root = "indexes"
out = "runs/a"
budget = "thorough"
mode = "all"
k = 50
shard_size = 64
[llm]
endpoint = "http://127.0.0.1:8000/v1"
model = "m"
"""))
    opts = run_options(spec, {"budget": "fast", "k": None})
    assert (opts.queries, opts.index_root, opts.out, opts.budget, opts.mode, opts.k, opts.shard_size) == (
        "q.parquet", "indexes", "runs/a", "fast", "all", 50, 64)
    # The [llm] table is parsed once, into the typed settings every later step uses.
    assert opts.llm == LLMConfig(endpoint="http://127.0.0.1:8000/v1", model="m")
    # An --index on the command line replaces the spec's index_root.
    opts = run_options(spec, {"index": "idx/one"})
    assert (opts.index, opts.index_root) == ("idx/one", None)


def test_every_shipped_spec_parses_and_validates():
    from pathlib import Path

    paths = sorted(Path(__file__).resolve().parents[1].glob("jobs/*.toml"))
    assert {p.name for p in paths} >= {"bulk_eval.toml", "nightly_rerank.toml", "demo.toml"}
    checked = 0
    for path in paths:
        spec = load_job_spec(path)
        if spec.run:
            run_options(spec, {}).validate()
            checked += 1
        if spec.rerank:
            rerank_options(spec, {}).validate()
            checked += 1
    assert checked >= 2


@pytest.mark.parametrize("text,match", [
    ("[run]\nqueries = 'q'\nout = 'o'\nshardsize = 3\n", "unknown key.*shardsize.*valid keys"),
    ("[runn]\n", "unknown section"),
    ("[run]\nqueries = 'q'\n", "missing --out"),
    ("[run]\nqueries = 'q'\nout = 'o'\nk = 'ten'\n", r"job\.toml: \[run\] `k` must be an integer"),
    ("[run]\nqueries = 'q'\nout = 'o'\nk = -4\n", r"job\.toml: \[run\] k = -4 is below its least value, 1 .*fix: "
                                                     r"write k = 100"),
    ("[run]\nqueries = 'q'\nout = 'o'\nmode = 'nope'\n", r"job\.toml: \[run\] mode = 'nope' is not one of auto"),
    ("[run\n", "cannot parse"),
])
def test_bad_specs_name_the_problem(tmp_path, text, match):
    with pytest.raises(BadInputError, match=match):
        run_options(load_job_spec(write(tmp_path, text)), {})


def test_rerank_section(tmp_path):
    spec = load_job_spec(write(tmp_path, "[rerank]\nresults = 'runs/a'\nout = 'runs/b'\ntop_n = 20\n"))
    opts = rerank_options(spec, {"reranker": "embedding"})
    assert (opts.results, opts.out, opts.top_n, opts.reranker) == ("runs/a", "runs/b", 20, "embedding")
    with pytest.raises(BadInputError, match="unknown key"):
        rerank_options(load_job_spec(write(tmp_path, "[rerank]\nresult = 'x'\n", "b.toml")), {})
    with pytest.raises(BadInputError, match=r"c\.toml: \[rerank\] top_n = 0 is below its least value"):
        rerank_options(load_job_spec(write(tmp_path, "[rerank]\nresults = 'a'\nout = 'b'\ntop_n = 0\n", "c.toml")), {})


def test_eval_section_takes_every_eval_flag_including_html(tmp_path):
    import argparse

    from codenib.commands import eval as eval_command
    from codenib.commands.jobs import EVAL_KEYS

    parser = argparse.ArgumentParser()
    eval_command.add_arguments(parser)
    flags = {a.dest for a in parser._actions} - {"help", "results", "tag", "allow_partial", "permutations", "seed"}
    assert flags == set(EVAL_KEYS)   # a new eval flag is a job-spec key too
    spec = load_job_spec(write(tmp_path, '[eval]\nqrels = "q.parquet"\nout = "rep"\nhtml = true\n'))
    assert spec.eval["html"] is True


def test_eval_section_becomes_eval_options_without_a_command_line():
    """[eval] is typed once (`EvalCommandOptions.from_table`), not turned back into flags."""
    from codenib.commands.eval import EvalCommandOptions

    opts = EvalCommandOptions.from_table({"qrels": "q.parquet", "measures": ["R@10", "RR@10"], "html": True,
                                          "out": "rep"}, "runs/a")
    assert (opts.results, opts.qrels, opts.measures, opts.html, opts.out, opts.permutations) == (
        "runs/a", "q.parquet", ("R@10", "RR@10"), True, "rep", 10_000)
    assert EvalCommandOptions.from_table({"measures": "nDCG@10, AP"}, "r").measures == ("nDCG@10", "AP")
    with pytest.raises(BadInputError, match="`html` must be true or false"):
        EvalCommandOptions.from_table({"html": "yes"}, "r", "job.toml [eval]")
    with pytest.raises(BadInputError, match="`qrels` must be a string"):
        EvalCommandOptions.from_table({"qrels": True}, "r")


def test_a_spec_value_the_command_line_overrides_is_not_checked(tmp_path):
    spec = load_job_spec(write(tmp_path, "[run]\nqueries = 'q'\nout = 'o'\nk = -4\n"))
    assert run_options(spec, {"k": 5}).k == 5
    with pytest.raises(BadInputError, match=r"\[run\] k = -4"):
        run_options(spec, {"k": None})
