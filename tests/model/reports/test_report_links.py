"""Report mentions that name code in other shapes than a traceback: a link to a file on a
source-hosting site, and a browser stack whose file is a build bundle the repository lacks."""

from __future__ import annotations

import pytest

from codenib.compiler.build import build_index
from codenib.compiler.build_options import BuildOptions
from codenib.index.loaded import load_index
from codenib.model.reports.report import read_report, resolve_mentions
from tests.fixture_repo import write_repo

REPO = {
    "src/generators/theme.ts": ("export function themeFixesFor(url: string): string[] {\n"
                                "    const fixes = [url];\n"
                                "    return fixes;\n}\n"),
    "src/utils/parse.ts": ("export function sitesFixesFor(text: string): string[] {\n"
                           "    return text.split('==');\n}\n"),
    "tests/server/index.js": "const http = require('http');\nhttp.createServer().listen(8080);\n",
}


@pytest.fixture(scope="module")
def ts_index(tmp_path_factory):
    root = write_repo(tmp_path_factory.mktemp("tsrepo"), REPO)
    out = tmp_path_factory.mktemp("tsidx") / "idx"
    build_index(root, out, BuildOptions(dense=False, progress=False, use_cache=False))
    return load_index(out)


def _priors(index, text):
    return resolve_mentions(read_report(text), index.symbols, index.nodes)


def test_a_link_to_a_line_of_a_hosted_file_is_a_path_mention():
    text = ("Wrong check\n\nhttps://github.com/acme/app/blob/d69522753bff6abea855bcbc7661642ffc950db4/"
            "src/generators/theme.ts#L2 seems to be wrong.")
    paths = [m for m in read_report(text).mentions if m.kind == "path"]
    assert [(m.text, m.line) for m in paths] == [("src/generators/theme.ts", 2)]
    assert text[paths[0].start:paths[0].end].startswith("src/generators/theme.ts")


def test_a_linked_line_resolves_to_the_definition_holding_it(ts_index):
    text = "Wrong check\n\nsee https://gitlab.com/acme/app/-/blob/main/src/generators/theme.ts#L3 here"
    got = {(p.file, ts_index.nodes.node_id[p.row] if p.row is not None else None)
           for p in _priors(ts_index, text) if p.mention.kind == "path"}
    assert got == {("src/generators/theme.ts", "src/generators/theme.ts::themeFixesFor")}


def test_a_frame_past_the_end_of_its_file_is_read_by_its_function_name(ts_index):
    # The bundle `index.js` is a build output: the repository's `tests/server/index.js` is
    # two lines long, so line 794 is not in it; the function names are the evidence.
    text = ("Extension breaks\n\nUncaught SyntaxError: Invalid regular expression\n"
            "    at sitesFixesFor (index.js:794)\n"
            "    at themeFixesFor (index.js:1420)\n")
    priors = [p for p in _priors(ts_index, text) if p.mention.kind == "frame"]
    ids = ts_index.nodes.node_id
    conf = {ids[p.row] if p.row is not None else p.file: p.confidence for p in priors}
    assert "tests/server/index.js" not in conf
    assert conf == {"src/utils/parse.ts::sitesFixesFor": pytest.approx(1.0),
                    "src/generators/theme.ts::themeFixesFor": pytest.approx(0.5)}
