"""Generated and vendored copies (`compiler.copies`) on small C files written here: which files
are copies, which definitions they copy, and the `copies` edges, all read off by hand."""

from __future__ import annotations

from codenib.compiler.copies import COPIES, copy_edges, copy_links, copy_report
from codenib.compiler.lang import read_foreign
from codenib.core.types import nodes_to_table

ALPHA = "int alpha(int x) {\n    int y = x * 2;\n    return y + 1;\n}\n"
BETA = "int beta(int x) {\n    if (x < 0)\n        return -x;\n    return x;\n}\n"
GAMMA = "int gamma(int n) {\n    int s = 0;\n    for (int i = 0; i < n; i++) s += i;\n    return s;\n}\n"
DELTA = "int delta(int a, int b) {\n    int d = a - b;\n    return d < 0 ? -d : d;\n}\n"
ONE = "static int one(void) { return 1; }\n"     # one line: too short to prove a copy


def _nodes(files: dict[str, str]):
    nodes = []
    for rel, text in sorted(files.items()):
        nodes += read_foreign(rel, text.encode()).nodes
    return nodes_to_table(nodes)


SOURCES = {"src/a.c": ALPHA + "\n" + BETA + ONE, "src/b.c": GAMMA + "\n" + DELTA}


def test_a_single_include_copy_is_linked_definition_by_definition_to_its_sources():
    table = _nodes({**SOURCES, "single_include/lib.c": ALPHA + BETA + GAMMA + DELTA + ONE})
    report = copy_report(table)
    assert report.copy_files == ("single_include/lib.c",)
    # The four long definitions, and `one` (short, but the same qualified name and text).
    assert report.copied_defs == 5
    assert report.source_files == ("src/a.c", "src/b.c")
    assert report.unsourced == ()
    c = "single_include/lib.c"
    assert copy_links(table) == [(f"{c}::{n}", f"{f}::{n}") for n, f in (
        ("alpha", "src/a.c"), ("beta", "src/a.c"), ("delta", "src/b.c"), ("gamma", "src/b.c"), ("one", "src/a.c"))]
    edges = {(e["src"], e["dst"], e["type"], e["count"]) for e in copy_edges(table).to_pylist()}
    assert (c, "src/a.c", COPIES, 3) in edges and (c, "src/b.c", COPIES, 2) in edges
    assert len(edges) == 7         # five definitions and two files


def test_an_unmarked_amalgamation_is_a_copy_by_its_shape():
    # No path mark, no banner: every long definition is found in exactly one other file, and
    # those two files are each smaller than it.
    table = _nodes({**SOURCES, "lib_all.c": ALPHA + BETA + GAMMA + DELTA})
    assert copy_report(table).copy_files == ("lib_all.c",)
    assert len(copy_links(table)) == 4


def test_a_banner_marks_a_generated_file_as_the_copy():
    # (A blank line after the banner: a comment right above a definition is part of it.)
    banner = "/* This file is auto-generated from src/a.c. Do not edit. */\n\n#include <stdio.h>\n\n"
    # Only one other file: the shape alone would not decide (two files or more are needed).
    table = _nodes({"src/a.c": ALPHA + BETA + GAMMA, "gen.c": banner + ALPHA + BETA + GAMMA})
    report = copy_report(table)
    assert report.copy_files == ("gen.c",) and report.copied_defs == 3


def test_two_identical_unmarked_files_are_left_alone():
    # Neither is known to be the source.
    table = _nodes({"x/util.c": ALPHA + BETA + GAMMA, "y/util.c": ALPHA + BETA + GAMMA})
    assert copy_report(table).copy_files == ()
    assert copy_edges(table).num_rows == 0


def test_too_few_copied_definitions_make_no_copy():
    # Two duplicated definitions (COPY_MIN_DEFS is 3), even in a vendored folder.
    table = _nodes({"src/a.c": ALPHA + BETA, "vendor/a.c": ALPHA + BETA})
    assert copy_report(table).copy_files == ()


def test_a_copy_whose_twins_are_all_generated_has_no_source():
    text = ALPHA + BETA + GAMMA
    table = _nodes({"dist/lib.c": text, "single_include/lib.c": text})
    report = copy_report(table)
    assert report.copy_files == ("dist/lib.c", "single_include/lib.c")
    assert report.copied_defs == 0 and report.unsourced == report.copy_files
    assert copy_edges(table).num_rows == 0


def test_a_definition_changed_in_the_copy_is_not_linked():
    edited = ALPHA.replace("x * 2", "x * 3")
    table = _nodes({**SOURCES, "single_include/lib.c": edited + BETA + GAMMA + DELTA})
    assert copy_report(table).copy_files == ("single_include/lib.c",)
    assert [c for c, _ in copy_links(table)] == [f"single_include/lib.c::{n}" for n in ("beta", "delta", "gamma")]
