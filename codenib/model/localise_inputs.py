"""How a bug report becomes the localisation scorer's inputs (`LocaliseInputs`): its search
texts and runs, its mentions resolved against an index, the quoted literals the index holds.

`codenib.model.localise` scores what this module gathers (and still offers its names); the
`bug_localisation` plan runs the same searches through the engines (`codenib.model.plans`), the
dev-set scripts in process (`search_runs`, `localise.feature_table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from codenib.model.library_paths import is_library_path
from codenib.model.literals import Literal, literal_holders
from codenib.model.reports.report import BugReport, Prior, about_tests, resolve_mentions

#: Runs a report is searched with: node-level BM25 of the whole text, of its title and of its
#: prose (code blocks and logs removed), and dense.
RUNS = ("bm25", "title", "prose", "dense")
#: Node run -> the whole-file BM25 run of the same text (`sparse_files/`): a file node's own
#: BM25 evidence is its file's content, as in file-level bug localisation (BugLocator's rVSM),
#: not its outline. Indexes built before `sparse_files/` keep the outline's scores.
FILE_RUNS = {"bm25": "file_bm25", "prose": "file_prose"}
#: BM25 depth per run: deep enough that files with several matching nodes show.
SPARSE_DEPTH = {"bm25": 1000, "title": 200, "prose": 1000}
#: Dense depth, and how much of the report the dense query sees (the encoder reads ~256
#: word pieces: the title and the opening prose carry the intent).
DENSE_DEPTH = 1000
DENSE_CHARS = 1500


@dataclass(frozen=True)
class LocaliseInputs:
    """Everything the scorer reads for one report.

    Args:
        runs: run name (`RUNS`) -> (rows, scores) of that search; absent runs count as empty
            (an index without vectors has no `dense`).
        priors: resolved mentions (`codenib.model.reports.report.resolve_mentions`).
        about_tests: the report is about test code (tests are then not demoted).
    """

    runs: Mapping[str, tuple[np.ndarray, np.ndarray]]
    priors: tuple[Prior, ...] = ()
    about_tests: bool = False
    words: frozenset[str] = frozenset()   # identifier-like words of the report, as written
    # the report's quoted literals found verbatim in the code; a node's and a file's evidence
    # is log2(1 + the weights of those they hold): several count more than one, less and less
    literals: tuple[Literal, ...] = ()
    # generated and vendored files (the index's `borrowed_files`): outside the library code,
    # as documentation and examples are (`f_nonlib`)
    borrowed: frozenset[str] = frozenset()


def sparse_texts(text: str, report: BugReport) -> dict[str, str]:
    """The node-level BM25 queries of a report: its whole text (package listings removed), its
    title, its prose."""
    return {"bm25": report.body if report.body else text[:report.chars],
            "title": report.title, "prose": report.prose or report.title}


def dense_text(report: BugReport) -> str:
    """The dense query of a report: title and the opening of its prose."""
    return f"{report.title}\n{report.prose[:DENSE_CHARS]}"


def inputs_for(report: BugReport, runs: Mapping[str, tuple[np.ndarray, np.ndarray]], index) -> LocaliseInputs:
    """Resolve a report's mentions against `index` and bundle them with its search runs."""
    priors = tuple(resolve_mentions(report, index.symbols, index.nodes))
    borrowed = frozenset(getattr(index, "borrowed_files", None) or ())
    scan = index.text_scan() if report.literals and hasattr(index, "text_scan") else None
    literals = (literal_holders(report.literals, scan, index.nodes.file,
                                lambda path: is_library_path(path) and path not in borrowed)
                if scan is not None else ())
    return LocaliseInputs(runs, priors, about_tests(report), report.words, literals, borrowed)


def file_rows_of(nodes) -> dict[str, int]:
    """File path -> row of its file node."""
    return {f: r for r, (f, kind) in enumerate(zip(nodes.file, nodes.kind)) if kind == "file"}


def search_runs(text: str, report: BugReport, sparse_search, dense_search=None, file_sparse=None) -> dict[str, tuple]:
    """A report's runs from in-process engines (`sparse_search(texts, k)`, `dense_search(texts, k)`,
    each returning (rows, scores) arrays with one row per text; `file_sparse`: the index's
    whole-file BM25, or None)."""
    texts = sparse_texts(text, report)
    rows, scores = sparse_search(list(texts.values()), max(SPARSE_DEPTH.values()))
    runs = {name: (rows[i][:SPARSE_DEPTH[name]], scores[i][:SPARSE_DEPTH[name]]) for i, name in enumerate(texts)}
    if file_sparse is not None:
        f_rows, f_scores = file_sparse.search([texts[run] for run in FILE_RUNS], file_sparse.sparse.num_docs)
        runs.update({name: (f_rows[i], f_scores[i]) for i, name in enumerate(FILE_RUNS.values())})
    if dense_search is not None:
        d_rows, d_scores = dense_search([dense_text(report)], DENSE_DEPTH)
        runs["dense"] = (d_rows[0], d_scores[0])
    return runs
