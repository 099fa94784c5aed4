"""`build_index`: repository -> index folder (nodes, edges, sparse, dense, manifest).

Its stages' helpers live beside it: `build_parse` (read, parse, the nodes table),
`build_graph` (the edges), `build_terms` (BM25 term counts), `build_cache` (the per-file
store) and `workers`. Which language a file is written in is the readers' business
(`codenib.compiler.lang`): nothing here asks.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq

from codenib.core import artifact
from codenib.compiler import state as incr_state
from codenib.compiler.build_cache import cached_files, fill_cache, open_cache
from codenib.compiler.build_options import BuildOptions, Logger
from codenib.compiler.build_parse import (
    file_facts,
    gc_paused,
    node_table,
    nodes_of,
    parse_files,
    read_sources,
    unchanged_files,
)
from codenib.compiler.build_graph import resolve_graph
from codenib.compiler.build_terms import term_counts
from codenib.compiler.lang import reader_of
from codenib.compiler.source import FolderTree, GitTree, SourceTree
from codenib.compiler.workers import Workers
from codenib.core.errors import BadInputError
from codenib.core.tokens import Tokenizer
from codenib.core.types import EDGE_TYPES, NODE_KINDS

#: The public names of the build, wherever they are defined.
__all__ = ["BuildSummary", "build_index"]


@dataclass(frozen=True, slots=True)
class BuildSummary:
    """What a build produced, for the closing summary and for tests."""

    out: str
    files: int
    nodes_by_kind: dict[str, int]
    edges_by_type: dict[str, int]
    parse_errors: list[tuple[str, str]]
    skipped: list[tuple[str, str]]
    seconds: dict[str, float]
    dense: dict | None
    manifest: dict
    reuse: dict | None = None           # what was reused from `BuildOptions.reuse`
    languages: dict[str, dict[str, int]] | None = None   # language -> {"files": n, "nodes": n}

    def render(self) -> str:
        """Human-readable closing summary."""
        total = sum(self.seconds.values())
        n_nodes = sum(self.nodes_by_kind.values())
        lines = [
            f"index written to {self.out}",
            f"  files      {self.files}  ({len(self.skipped)} skipped, {len(self.parse_errors)} with parse errors"
            + (f", {len(borrowed)} generated or vendored" if (borrowed := self.manifest.get("borrowed_files")) else "")
            + ")",
            "  nodes      " + f"{n_nodes}  (" + ", ".join(f"{k} {v}" for k, v in self.nodes_by_kind.items()) + ")",
            "  edges      " + f"{sum(self.edges_by_type.values())}  ("
            + ", ".join(f"{k} {v}" for k, v in self.edges_by_type.items()) + ")",
        ]
        if self.languages:
            lines.append("  languages  " + ", ".join(
                f"{lang} {c['files']} files {c['nodes']} nodes" for lang, c in self.languages.items()))
        if self.dense:
            d = self.dense
            lines.append(f"  dense      {d['name']} dim {d['dimension']} ({d.get('encoder', {}).get('backend', 'torch')})"
                         f": encoded {d['encoded']}, "
                         f"reused {d['reused']}" + (f", {d['ann']} recall@100 {d['ann_recall_at_100']:.3f}"
                                                  if d.get("ann_recall_at_100") is not None else ""))
        else:
            lines.append("  dense      none (built with --no-dense)")
        if self.reuse:
            r = self.reuse
            lines.append(f"  reused     from {r['from']}: {r['files_kept']} files unchanged, "
                         f"{r['files_parsed']} parsed, {r['units_resolved']} definitions resolved again "
                         f"({r['units_kept']} kept), {r['texts_tokenized']} texts tokenized")
        history = self.manifest.get("history")
        if history:
            lines.append(f"  history    {history['commits']} commits to {history['head'][:12]} "
                         f"({history['read']} read, {history['reused']} reused), {history['changes']} changes")
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in self.seconds.items())
        rate = f"{self.files / total:.0f} files/s, {n_nodes / total:.0f} nodes/s" if total > 0 else ""
        lines.append(f"  time       {total:.1f}s  ({stages}; {rate})")
        for path, err in self.parse_errors[:10]:
            lines.append(f"  parse error  {path}: {err}")
        if len(self.parse_errors) > 10:
            lines.append(f"  ... and {len(self.parse_errors) - 10} more parse errors (see nodes.parquet)")
        return "\n".join(lines)



def _read_history(source, nodes, options: BuildOptions, workers: Workers, log: Logger):
    """The history tables of `source`, reusing `options.reuse`'s history where it can."""
    from codenib.compiler import history as hist

    def map_chunks(fn, chunks):
        if workers.size <= 1 or len(chunks) <= 1:
            return [fn(c) for c in chunks]
        return workers.map_runs(fn, chunks, "history", "chunk", options.progress)

    return hist.read_history(source, set(nodes.column("node_id").to_pylist()),
                             Path(options.reuse) if options.reuse is not None else None, map_chunks, log)


def build_index(repo: "str | Path | SourceTree", out: str | Path, options: BuildOptions = BuildOptions(),
                log: Logger | None = None, finish: Callable[[Path, Logger], dict] | None = None) -> BuildSummary:
    """Compile `repo` (a folder, or a `SourceTree` such as one commit of a git repository)
    into the index folder `out`, atomically.

    `finish(staging, log)`, when given, runs on the complete staged index (manifest written)
    before it replaces `out`: it may add files to the staging folder and returns entries
    for the manifest, which is then written again listing them (the layers above the
    compiler add their artifacts this way: the weights fitted on the history).

    Each file is read once; every stage works from those bytes. With `options.reuse`, the
    files whose bytes are unchanged keep their nodes, their edges when nothing they read
    changed, their BM25 term counts and their vectors; the result equals a full build.

    Raises:
        BadInputError: missing repository, no source files, or an `out` that exists and
            is not a CodeNib index or also holds files CodeNib did not write (without `force`).
    """
    log = log or (lambda msg: print(msg, file=sys.stderr))
    tree = repo if isinstance(repo, (FolderTree, GitTree)) else FolderTree(repo)
    out = Path(out)
    artifact.check_output_dir(out, options.force)
    # The old index is verified here, once: `Previous` carries its manifest to the later stages.
    old_manifest = artifact.read_manifest(options.reuse, verify=True) if options.reuse is not None else None
    Tokenizer(options.tokenizer)    # bad settings fail here, before any work
    history_source = None
    if options.history is not None:     # a bad GITDIR or REV fails here too
        from codenib.compiler import history as hist

        # A commit's tree is its own snapshot: its history is that repository's, at that commit.
        spec = options.history if isinstance(tree, FolderTree) else hist.HistorySpec(Path(tree.gitdir), tree.commit)
        history_source = hist.resolve(spec, tree.root if isinstance(tree, FolderTree) else Path(tree.gitdir))
    seconds: dict[str, float] = {}

    t0 = time.perf_counter()
    files, skipped = tree.walk(options.max_file_bytes)
    for s in skipped:
        log(f"warning: {s.rel_path}: skipped: {s.reason}")
    if not files:
        raise BadInputError(
            "no source files found in the repository" + (f" ({len(skipped)} skipped, named above)" if skipped else ""),
            path=tree.describe(), fix="pass --max-file-bytes N to index larger files" if any(
                s.reason.startswith("larger than") for s in skipped) else
            "pass the root of a repository that holds source files "
            "(Python, JavaScript, TypeScript, Go, Java, Rust, C or C++)")
    # A root that is itself a package (indexing `codenib/`) keeps its name in module paths.
    root_package = tree.name if tree.read_path("__init__.py") is not None else None
    with Workers(options.jobs) as workers:
        with gc_paused():
            sources, read_errors = read_sources(files, tree.read)
            if history_source is not None and isinstance(tree, FolderTree):
                from codenib.compiler.history.snapshot import check_snapshot

                check_snapshot(history_source, sources, tree.root)   # before any parse: REV must be this snapshot
            previous = None
            if options.reuse is not None:
                previous = incr_state.load_previous(Path(options.reuse), root_package, options.tokenizer, log,
                                                    graph=False, manifest=old_manifest)
            shas = {rel: hashlib.sha256(raw or b"").hexdigest() for rel, raw in sources.items()}
            kept = unchanged_files(previous, shas, read_errors)
            store = open_cache(options, out)
            cached = cached_files(store, sorted(set(sources) - kept - set(read_errors)), shas)
            # `read_facts`: what the graph stages take of the files read now (imports, calls, bases).
            parsed, trees, read_facts = parse_files(sorted(set(sources) - kept - set(cached)), sources, read_errors,
                                         workers, options.progress)
            fresh = set(parsed)
            parsed.update((rel, entry.nodes) for rel, entry in cached.items())
            seconds["parse"] = time.perf_counter() - t0

            t0 = time.perf_counter()
            nodes, origin = node_table(parsed, previous, kept)
            facts = file_facts(nodes)
            resolved = resolve_graph(tree.read_path, sources, nodes, facts, read_facts, trees, previous, root_package,
                                     options.progress)
            graph, graph_choice, edges = resolved.python, resolved.choice, resolved.edges
            if graph_choice is not None:
                log(f"reuse: nodes of {len(kept)} unchanged files kept, {len(fresh)} files parsed; "
                    + graph_choice.describe())
            n_parsed = len(fresh)
            del sources, trees, read_facts
            seconds["graph"] = time.perf_counter() - t0

            history_tables = None
            if history_source is not None:
                t0 = time.perf_counter()
                history_tables = _read_history(history_source, nodes, options, workers, log)
                seconds["history"] = time.perf_counter() - t0

        parse_errors = [(f, e) for f, (_, ok, e) in sorted(facts.items()) if not ok]
        for path, err in parse_errors:
            log(f"warning: {path}: {err}; {reader_of(path).error_note}")

        with artifact.atomic_index_dir(out, options.force) as staging:
            pq.write_table(nodes, staging / artifact.NODES_FILE)
            pq.write_table(edges, staging / artifact.EDGES_FILE)
            if history_tables is not None:
                hist.write_history(staging, history_tables)

            t0 = time.perf_counter()
            from codenib.compiler import sparse
            from codenib.engines.bm25_terms import file_terms

            cached_terms = {n.node_id: c for entry in cached.values() for n, c in zip(entry.nodes, entry.terms)}
            terms, tokenized, new_counts = term_counts(nodes, origin, previous, options, workers, cached_terms)
            sparse.build_sparse_from_terms(terms, staging / artifact.SPARSE_DIR)
            sparse.write_bm25(file_terms(terms, *(nodes.column(c).to_pylist() for c in
                                                 ("kind", "file", "start_line", "end_line"))),
                              staging / artifact.FILE_SPARSE_DIR)
            seconds["sparse"] = time.perf_counter() - t0
            workers.close()     # their memory goes back before the dense stage loads a model

            dense_info = None
            if options.dense:
                t0 = time.perf_counter()
                from codenib.compiler.dense import build_dense

                dense_info = build_dense(nodes_of(nodes), staging / artifact.DENSE_DIR, options, log,
                                         previous, store.backend if store is not None else None)
                seconds["dense"] = time.perf_counter() - t0

            incr_state.save_state(staging, graph.state, terms, root_package, options.tokenizer, resolved.facts)
            kinds = nodes.column("kind").to_pylist()
            nodes_by_kind = Counter(kinds)
            edges_by_type = Counter(edges.column("type").to_pylist())
            reuse = None
            if previous is not None:
                reuse = {"from": str(previous.path), "files_kept": len(kept), "files_parsed": n_parsed,
                         "files_cached": len(cached),
                         "files_resolved": graph.files_parsed, "units_resolved": graph.units_resolved,
                         "units_kept": graph.units_kept, "files_scanned": graph.scanned,
                         "dirty_keys": graph.dirty_keys, "texts_tokenized": tokenized,
                         "graph": graph_choice.describe() if graph_choice is not None else None}
            extra = {} if history_tables is None else {"history": hist.manifest_entry(history_tables)}
            fields = {
                "source_root_name": tree.name,
                "root_package": root_package,
                "git_commit": tree.commit,
                "tokenizer": options.tokenizer.to_dict(),
                "model": dense_info,
                "counts": {
                    "files": len(files),
                    "nodes": nodes.num_rows,
                    "nodes_by_kind": {k: nodes_by_kind.get(k, 0) for k in NODE_KINDS},
                    "edges_by_type": {t: edges_by_type.get(t, 0) for t in EDGE_TYPES},
                    "parse_errors": len(parse_errors),
                    "skipped_files": len(skipped),
                },
                "build_seconds": {k: round(v, 3) for k, v in seconds.items()},
                "reuse": reuse,
                "max_file_bytes": options.max_file_bytes,
                "skipped_files": [{"path": s.rel_path, "reason": s.reason} for s in skipped],
                "borrowed_files": {f.rel_path: f.borrowed for f in files if f.borrowed},
                "cache": {"path": str(store.root), "files_found": len(cached)} if store is not None else None,
                **extra,
            }
            manifest = artifact.write_manifest(staging, fields)
            if finish is not None:
                t0 = time.perf_counter()
                added = finish(staging, log)
                seconds["finish"] = time.perf_counter() - t0
                manifest = artifact.write_manifest(staging, {
                    **fields, **added, "build_seconds": {k: round(v, 3) for k, v in seconds.items()}})
    if store is not None and fresh:
        t0 = time.perf_counter()
        fill_cache(store, fresh, parsed, shas, terms, nodes, new_counts, log)
        seconds["cache"] = time.perf_counter() - t0
    return BuildSummary(
        out=str(out),
        files=len(files),
        nodes_by_kind=manifest["counts"]["nodes_by_kind"],
        edges_by_type=manifest["counts"]["edges_by_type"],
        parse_errors=parse_errors,
        skipped=[(s.rel_path, s.reason) for s in skipped],
        seconds=seconds,
        dense=dense_info,
        manifest=manifest,
        reuse=reuse,
        languages=_language_counts(nodes),
    )


def _language_counts(nodes) -> dict[str, dict[str, int]]:
    """Files and nodes per language, most files first."""
    counts: dict[str, dict[str, int]] = {}
    for lang, kind in zip(nodes.column("language").to_pylist(), nodes.column("kind").to_pylist()):
        c = counts.setdefault(lang or "python", {"files": 0, "nodes": 0})
        c["nodes"] += 1
        c["files"] += kind == "file"
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1]["files"], kv[0])))
