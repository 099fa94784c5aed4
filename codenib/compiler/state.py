"""The `incr/` folder of an index: what a later build of the same repository reuses.

    incr/state.json          versions and settings the rest was built with
    incr/files.parquet       per file: content sha256, module name, the file that won that
                             module name, whether it parsed
    incr/units.parquet       per unit of resolution (a definition, the rest of a file, a
                             file's contains edges): its file and the hash of its text
    incr/unit_edges.parquet  each unit's edges with counts (edges.parquet sums them)
    incr/keys.parquet        dependency keys read by some unit, with owner file and digest
    incr/reads.parquet       (unit row, key row): which keys each unit read
    incr/terms_*.npy, incr/terms_vocab.json   BM25 term counts of every node row
    incr/foreign_facts.parquet  per non-Python file: content sha256 and its `ForeignFacts`
                             (JSON): what the other languages' graph is resolved from

Nodes are not repeated here: a file's rows of nodes.parquet are its parse results.
Nothing is pickled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from codenib.core import artifact
from codenib.compiler.lang.python_graph import FileFacts, GraphState
from codenib.compiler.lang import reader_versions
from codenib.compiler.lang.python_parse import PARSE_VERSION
from codenib.compiler.lang.python_resolve.deps import RESOLVE_VERSION
from codenib.engines.bm25_terms import DocTerms
from codenib.core.tokens import TokenizerConfig

INCR_DIR = "incr"
STATE_FILE = "state.json"
FILES_FILE = "files.parquet"
UNITS_FILE = "units.parquet"
UNIT_EDGES_FILE = "unit_edges.parquet"
KEYS_FILE = "keys.parquet"
READS_FILE = "reads.parquet"
FOREIGN_FACTS_FILE = "foreign_facts.parquet"
#: Bumped when the layout of `incr/` changes.
STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class Previous:
    """An earlier index of the same repository, as far as this build can reuse it."""

    path: Path
    graph: GraphState | None        # None: edges are not reusable, or not loaded (`with_graph`)
    nodes: pa.Table | None
    terms: DocTerms | None          # None: BM25 counts are not reusable (other tokenizer)
    foreign_facts: dict | None = None   # rel -> (content sha256, ForeignFacts) of non-Python files
    files: dict[str, FileFacts] | None = None   # None: nodes and edges are not reusable
    manifest: dict | None = None    # its manifest, verified once by the build (the dense stage
                                    # reuses vectors by the fingerprint recorded there)


def with_graph(previous: Previous) -> Previous:
    """`previous` with its graph state loaded (units, keys, reads: the large part of `incr/`)."""
    if previous.graph is not None or previous.files is None:
        return previous
    return replace(previous, graph=_load_graph(previous.path / INCR_DIR, previous.files))


def save_state(folder: Path, graph: GraphState, terms: DocTerms, root_package: str | None,
               tokenizer: TokenizerConfig, foreign_facts: dict | None = None) -> None:
    """Write `incr/` under the staging folder `folder` (`foreign_facts`: rel -> (content
    sha256, ForeignFacts) of the non-Python files)."""
    incr = folder / INCR_DIR
    incr.mkdir(parents=True, exist_ok=True)
    (incr / STATE_FILE).write_text(json.dumps(_meta(root_package, tokenizer), indent=2, sort_keys=True), encoding="utf-8")
    files = sorted(graph.files.items())
    pq.write_table(pa.table({
        "path": [p for p, _ in files],
        "content_sha256": [f.content_sha256 for _, f in files],
        "module": [f.module for _, f in files],
        "module_path": [f.module_path for _, f in files],
        "parsed": [f.parsed for _, f in files],
    }), incr / FILES_FILE)
    pq.write_table(pa.table({"unit": graph.units, "file": graph.unit_files, "hash": graph.unit_hashes}),
                   incr / UNITS_FILE)
    pq.write_table(graph.unit_edges, incr / UNIT_EDGES_FILE)
    pq.write_table(pa.table({"key": graph.keys, "owner": graph.owners, "digest": graph.digests}),
                   incr / KEYS_FILE)
    pq.write_table(pa.table({"unit": pa.array(graph.reads_unit, pa.int32()),
                             "key": pa.array(graph.reads_key, pa.int32())}), incr / READS_FILE)
    terms.save(incr)
    rows = sorted((foreign_facts or {}).items())
    pq.write_table(pa.table({"path": [p for p, _ in rows], "content_sha256": [sha for _, (sha, _) in rows],
                             "facts": [json.dumps(f.to_dict(), sort_keys=True) for _, (_, f) in rows]},
                            schema=pa.schema([("path", pa.string()), ("content_sha256", pa.string()),
                                              ("facts", pa.string())])),
                   incr / FOREIGN_FACTS_FILE)


def _load_foreign_facts(incr: Path) -> dict:
    """What `save_state` wrote of the non-Python files' facts ({} when absent or unreadable:
    those files are read again)."""
    from codenib.compiler.lang import ForeignFacts

    try:
        cols = _read(incr / FOREIGN_FACTS_FILE).to_pydict()
        return {p: (sha, ForeignFacts.from_dict(json.loads(text)))
                for p, sha, text in zip(cols["path"], cols["content_sha256"], cols["facts"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def load_previous(index_dir: Path, root_package: str | None, tokenizer: TokenizerConfig,
                  log: Callable[[str], None], graph: bool = True, manifest: dict | None = None) -> Previous:
    """What of `index_dir` (a verified index, `manifest` its manifest) this build can reuse;
    says why not on `log`.

    With `graph` False the graph state is left on disk until `with_graph` (a build that
    resolves every file afresh never reads it)."""
    incr = index_dir / INCR_DIR
    nothing = Previous(index_dir, None, None, None, manifest=manifest)
    if manifest is not None and artifact.is_store_layout(manifest):
        log(f"reuse: {index_dir} is in the store layout (no incremental state); its files' nodes come from "
            "the per-file store where this build uses the same store, and every file is resolved again")
        return nothing
    try:
        meta = json.loads((incr / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log(f"reuse: {index_dir} has no incremental state (built by an older CodeNib); "
            "parsing and resolving every file")
        return nothing
    expected = _meta(root_package, tokenizer)
    for field in ("state_version", "parse_version", "reader_versions", "resolve_version", "root_package"):
        if meta.get(field) != expected[field]:
            log(f"reuse: {index_dir} was built with {field} {meta.get(field)!r}, this build has "
                f"{expected[field]!r}; parsing and resolving every file")
            return nothing
    files = _read(incr / FILES_FILE).to_pydict()
    facts = {p: FileFacts(s, m, mp, ok) for p, s, m, mp, ok in
             zip(files["path"], files["content_sha256"], files["module"], files["module_path"], files["parsed"])}
    nodes = _read(index_dir / artifact.NODES_FILE)
    terms = None
    if meta.get("tokenizer") == expected["tokenizer"]:
        terms = DocTerms.load(incr)
        if terms.num_docs != nodes.num_rows:
            terms = None
    else:
        log(f"reuse: {index_dir} was tokenized with other settings; tokenizing every node again")
    return Previous(index_dir, _load_graph(incr, facts) if graph else None, nodes, terms,
                    foreign_facts=_load_foreign_facts(incr), files=facts, manifest=manifest)


def _load_graph(incr: Path, facts: dict[str, FileFacts]) -> GraphState:
    units = _read(incr / UNITS_FILE).to_pydict()
    keys = _read(incr / KEYS_FILE).to_pydict()
    reads = _read(incr / READS_FILE)
    return GraphState(facts, units["unit"], units["file"], units["hash"], keys["key"], keys["digest"],
                      keys["owner"], reads.column("unit").to_numpy().astype(np.int32),
                      reads.column("key").to_numpy().astype(np.int32),
                      _read(incr / UNIT_EDGES_FILE).combine_chunks())


def _read(path: Path) -> pa.Table:
    """One Parquet file (without `read_table`'s dataset layer, which costs an import)."""
    return pq.ParquetFile(path).read()


def _meta(root_package: str | None, tokenizer: TokenizerConfig) -> dict:
    # `reader_versions`: the nodes of other languages' files are reused by content too.
    return {"state_version": STATE_VERSION, "parse_version": PARSE_VERSION, "reader_versions": reader_versions(),
            "resolve_version": RESOLVE_VERSION, "root_package": root_package,
            "tokenizer": tokenizer.to_dict()}
