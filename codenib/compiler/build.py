"""`build_index`: repository -> index folder (nodes, edges, sparse, dense, manifest)."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codenib import artifact
from codenib.compiler import state as incr_state
from codenib.compiler.graph import KEEP_TREES_BYTES, build_graph
from codenib.compiler.parse import ParsedFile, parse_source, parse_unreadable
from codenib.compiler.walk import SourceFile, walk_repository
from codenib.errors import BadInputError
from codenib.tokens import Tokenizer, TokenizerConfig
from codenib.types import EDGE_TYPES, NODE_KINDS, NODES_SCHEMA, Node, nodes_to_table

#: Parse in worker processes from this many files to parse (below, starting them costs more).
PARALLEL_MIN_FILES = 200
#: Count BM25 terms in worker processes from this many texts to tokenize.
PARALLEL_MIN_TEXTS = 4_000
#: Work is cut into this many chunks per worker, so that one slow chunk does not idle the rest.
CHUNKS_PER_WORKER = 4


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """What the `index` command builds; the defaults are the offline defaults."""

    model: str | None = None            # None: the packaged all-MiniLM-L6-v2
    dense: bool = True
    device: str = "auto"
    encoder: str = "auto"               # torch | onnx | onnx-int8 | openvino | auto (codenib.engines.backends)
    reuse: Path | None = None           # an earlier index of the repository: unchanged files,
                                        # edges, BM25 counts and vectors are reused from it
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    ann: str = "flat"                   # flat (exact) | hnsw
    batch_size: int | None = None     # None: 32 on the CPU, 256 on CUDA
    max_seq_length: int | None = None
    progress: bool = True
    force: bool = False                 # replace an index folder that also holds others' files
    jobs: int | None = None             # worker processes for parsing and tokenizing; None: CPUs
    cache: Path | None = None           # per-file store (nodes, term counts) shared by indexes;
                                        # None: `.codenib-cache` next to the output folder
    use_cache: bool = True


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

    def render(self) -> str:
        """Human-readable closing summary."""
        total = sum(self.seconds.values())
        n_nodes = sum(self.nodes_by_kind.values())
        lines = [
            f"index written to {self.out}",
            f"  files      {self.files}  ({len(self.skipped)} skipped, {len(self.parse_errors)} with parse errors)",
            "  nodes      " + f"{n_nodes}  (" + ", ".join(f"{k} {v}" for k, v in self.nodes_by_kind.items()) + ")",
            "  edges      " + f"{sum(self.edges_by_type.values())}  ("
            + ", ".join(f"{k} {v}" for k, v in self.edges_by_type.items()) + ")",
        ]
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
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in self.seconds.items())
        rate = f"{self.files / total:.0f} files/s, {n_nodes / total:.0f} nodes/s" if total > 0 else ""
        lines.append(f"  time       {total:.1f}s  ({stages}; {rate})")
        for path, err in self.parse_errors[:10]:
            lines.append(f"  parse error  {path}: {err}")
        if len(self.parse_errors) > 10:
            lines.append(f"  ... and {len(self.parse_errors) - 10} more parse errors (see nodes.parquet)")
        return "\n".join(lines)


Logger = Callable[[str], None]


def build_index(repo: str | Path, out: str | Path, options: BuildOptions = BuildOptions(),
                log: Logger | None = None) -> BuildSummary:
    """Compile `repo` into the index folder `out`, atomically.

    Each file is read once; every stage works from those bytes. With `options.reuse`, the
    files whose bytes are unchanged keep their nodes, their edges when nothing they read
    changed, their BM25 term counts and their vectors; the result equals a full build.

    Raises:
        BadInputError: missing repository, no Python files, or an `out` that exists and
            is not a CodeNib index or also holds files CodeNib did not write (without `force`).
    """
    log = log or (lambda msg: print(msg, file=sys.stderr))
    repo = Path(repo)
    out = Path(out)
    artifact.check_output_dir(out, options.force)
    if options.reuse is not None:
        artifact.read_manifest(options.reuse, verify=True)
    Tokenizer(options.tokenizer)    # bad settings fail here, before any work
    seconds: dict[str, float] = {}

    t0 = time.perf_counter()
    files, skipped = walk_repository(repo)
    if not files:
        raise BadInputError("no Python files found in the repository", path=str(repo),
                            fix="pass the root of a repository that holds .py files")
    # A root that is itself a package (indexing `codenib/`) keeps its name in module paths.
    root_package = repo.resolve().name if (repo / "__init__.py").is_file() else None
    with _Workers(options.jobs) as workers:
        with _gc_paused():
            sources, read_errors = _read_sources(files)
            previous = None
            if options.reuse is not None:
                previous = incr_state.load_previous(Path(options.reuse), root_package, options.tokenizer, log)
            shas = {rel: hashlib.sha256(raw or b"").hexdigest() for rel, raw in sources.items()}
            kept = _unchanged_files(previous, shas, read_errors)
            store = _open_cache(options, out)
            cached = _cached_files(store, sorted(set(sources) - kept - set(read_errors)), shas)
            parsed, trees = _parse_files(sorted(set(sources) - kept - set(cached)), sources, read_errors,
                                         workers, options.progress)
            fresh = set(parsed)
            parsed.update((rel, entry.nodes) for rel, entry in cached.items())
            seconds["parse"] = time.perf_counter() - t0

            t0 = time.perf_counter()
            nodes, origin = _node_table(parsed, previous, kept)
            facts = _file_facts(nodes)
            graph = build_graph(sources, facts, root_package, previous.graph if previous else None,
                                options.progress, trees)
            n_parsed = len(fresh)
            del sources, trees
            seconds["graph"] = time.perf_counter() - t0

        parse_errors = [(f, e) for f, (_, ok, e) in sorted(facts.items()) if not ok]
        for path, err in parse_errors:
            log(f"warning: {path}: {err}; indexed as a file node without definitions")

        with artifact.atomic_index_dir(out, options.force) as staging:
            pq.write_table(nodes, staging / artifact.NODES_FILE)
            pq.write_table(graph.edges, staging / artifact.EDGES_FILE)

            t0 = time.perf_counter()
            from codenib.compiler import sparse

            cached_terms = {n.node_id: c for entry in cached.values() for n, c in zip(entry.nodes, entry.terms)}
            terms, tokenized, new_counts = _term_counts(nodes, origin, previous, options, workers, cached_terms)
            sparse.build_sparse_from_terms(terms, staging / artifact.SPARSE_DIR)
            seconds["sparse"] = time.perf_counter() - t0
            workers.close()     # their memory goes back before the dense stage loads a model

            dense_info = None
            if options.dense:
                t0 = time.perf_counter()
                from codenib.compiler.dense import build_dense

                dense_info = build_dense(_nodes_of(nodes), staging / artifact.DENSE_DIR, options, log)
                seconds["dense"] = time.perf_counter() - t0

            incr_state.save_state(staging, graph.state, terms, root_package, options.tokenizer)
            kinds = nodes.column("kind").to_pylist()
            nodes_by_kind = Counter(kinds)
            edges_by_type = Counter(graph.edges.column("type").to_pylist())
            reuse = None
            if previous is not None:
                reuse = {"from": str(previous.path), "files_kept": len(kept), "files_parsed": n_parsed,
                         "files_cached": len(cached),
                         "files_resolved": graph.files_parsed, "units_resolved": graph.units_resolved,
                         "units_kept": graph.units_kept, "files_scanned": graph.scanned,
                         "dirty_keys": graph.dirty_keys, "texts_tokenized": tokenized}
            manifest = artifact.write_manifest(staging, {
                "source_root_name": repo.resolve().name,
                "root_package": root_package,
                "git_commit": artifact.git_commit(repo.resolve()),
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
                "cache": {"path": str(store.root), "files_found": len(cached)} if store is not None else None,
            })
    if store is not None and fresh:
        t0 = time.perf_counter()
        _fill_cache(store, fresh, parsed, shas, terms, nodes, new_counts, log)
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
    )


# --- helpers ---------------------------------------------------------------------------------

@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while parsing and resolving.

    Those stages allocate millions of small objects and free them by reference counting;
    with the collector on, its full passes over the growing heap cost as much as the
    parsing itself (measured: `ast.parse` alone runs about twice as fast without it).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _read_sources(files: Sequence[SourceFile]) -> tuple[dict[str, bytes | None], dict[str, str]]:
    """The bytes of every file, read once (None and the reason when unreadable)."""
    sources: dict[str, bytes | None] = {}
    errors: dict[str, str] = {}
    for f in files:
        try:
            sources[f.rel_path] = f.abs_path.read_bytes()
        except OSError as exc:
            sources[f.rel_path] = None
            errors[f.rel_path] = f"unreadable: {exc.strerror}"
    return sources, errors


def _unchanged_files(previous, shas: dict[str, str], read_errors: dict[str, str]) -> set[str]:
    """Files whose nodes the earlier index holds for the same bytes."""
    if previous is None or previous.graph is None:
        return set()
    old = previous.graph.files
    return {rel for rel, sha in shas.items()
            if rel not in read_errors and rel in old and old[rel].content_sha256 == sha}


def _parse_files(rels: list[str], sources: dict[str, bytes | None], read_errors: dict[str, str],
                 workers: "_Workers", progress: bool) -> tuple[dict[str, list[Node]], dict[str, ParsedFile]]:
    """The nodes of each file in `rels`, parsed in worker processes when there are many.

    Parsed here, the first files' trees are returned too (up to `KEEP_TREES_BYTES` of source):
    the graph stage needs the same trees and need not parse those files again.
    """
    items = [(rel, sources[rel], read_errors.get(rel)) for rel in rels]
    if workers.size > 1 and len(items) >= PARALLEL_MIN_FILES:
        chunks = _chunks(items, workers.size * CHUNKS_PER_WORKER, lambda it: len(it[1] or b""))
        results = workers.map(_parse_chunk, chunks, desc="parse", unit="chunk", progress=progress)
        return {rel: nodes for chunk in results for rel, nodes in chunk}, {}
    from codenib.progress import Progress

    nodes: dict[str, list[Node]] = {}
    trees: dict[str, ParsedFile] = {}
    budget = KEEP_TREES_BYTES
    with Progress("parse", len(items), "files", enabled=progress) as bar:
        for rel, raw, error in items:
            pf = _parse_one(rel, raw, error)
            nodes[rel] = pf.nodes
            if raw is not None and len(raw) <= budget:
                budget -= len(raw)
                pf.nodes = []
                trees[rel] = pf
            bar.update(1)
    return nodes, trees


def _parse_chunk(items) -> list[tuple[str, list[Node]]]:
    """Worker task: (rel, bytes, read error) -> (rel, nodes)."""
    gc.disable()    # in a worker process: nothing else runs there
    return [(rel, _parse_one(rel, raw, error).nodes) for rel, raw, error in items]


def _parse_one(rel: str, raw: bytes | None, error: str | None) -> ParsedFile:
    return parse_unreadable(rel, error) if raw is None else parse_source(rel, raw)


def _node_table(parsed: dict[str, list[Node]], previous, kept: set[str]) -> tuple[pa.Table, list]:
    """nodes.parquet's table, sorted by node id, and each row's origin: the row of the
    earlier index it was taken from (an int), or None for a node parsed now."""
    new_nodes = [n for nodes in parsed.values() for n in nodes]
    if not new_nodes and previous is not None and kept == set(previous.graph.files):
        table = previous.nodes.cast(NODES_SCHEMA).combine_chunks()    # the same files, unchanged
        return table, list(range(table.num_rows))
    parts = [nodes_to_table(new_nodes)]
    origin: list = [None] * len(new_nodes)
    if kept:
        old = previous.nodes
        rows = pc.indices_nonzero(pc.is_in(old.column("file"), value_set=pa.array(sorted(kept)))).to_numpy()
        parts.append(old.take(rows).cast(NODES_SCHEMA))
        origin.extend(rows.tolist())
    table = pa.concat_tables(parts)
    order = pc.sort_indices(table, sort_keys=[("node_id", "ascending")])
    table = table.take(order).combine_chunks()
    return table, [origin[i] for i in order.to_numpy()]


def _file_facts(nodes: pa.Table) -> dict[str, tuple[str, bool, str | None]]:
    """Per file: content sha256, whether it parsed, and its parse error (from file nodes)."""
    files = nodes.filter(pc.equal(nodes.column("kind"), "file"))
    return {rel: (sha, err is None, err) for rel, sha, err in zip(
        files.column("file").to_pylist(), files.column("content_sha256").to_pylist(),
        files.column("parse_error").to_pylist())}


def _term_counts(nodes: pa.Table, origin: list, previous, options: BuildOptions, workers: "_Workers",
                 cached: dict[str, Counter]):
    """BM25 term counts of every node row: reused for a node whose text the earlier index
    holds (same id, same text) or the store has (`cached`, by node id), counted for the rest.

    Returns them, how many texts were counted, and the counts made now by node id.
    """
    from codenib.compiler.sparse import assemble_terms

    old_terms = previous.terms if previous is not None else None
    rows: list = list(origin) if old_terms is not None else [None] * nodes.num_rows
    if cached:
        for i, nid in enumerate(nodes.column("node_id").to_pylist()):
            if rows[i] is None and nid in cached:
                rows[i] = cached[nid]
    todo = [i for i, r in enumerate(rows) if r is None]
    texts = nodes.column("text").take(todo).to_pylist() if todo else []
    if old_terms is not None and todo:
        # A changed file's unchanged definitions keep their text: match them by id.
        old_ids = previous.nodes.column("node_id").to_pylist()
        old_row = {nid: i for i, nid in enumerate(old_ids)}
        ids = nodes.column("node_id").take(todo).to_pylist()
        old_text = previous.nodes.column("text")
        still = []
        for i, nid, text in zip(todo, ids, texts):
            r = old_row.get(nid)
            if r is not None and old_text[r].as_py() == text:
                rows[i] = r
            else:
                still.append((i, text))
        todo, texts = [i for i, _ in still], [t for _, t in still]
    counts = _count_texts(texts, options.tokenizer, workers, options.progress)
    for i, c in zip(todo, counts):
        rows[i] = c
    ids = nodes.column("node_id").take(todo).to_pylist() if todo else []
    return assemble_terms(rows, old_terms), len(todo), dict(zip(ids, counts))


def _open_cache(options: BuildOptions, out: Path):
    """The per-file store this build reads and fills, or None."""
    if not options.use_cache:
        return None
    from codenib.compiler.cache import DEFAULT_CACHE_NAME, FileCache

    return FileCache(options.cache or out.absolute().parent / DEFAULT_CACHE_NAME, options.tokenizer)


def _cached_files(store, rels: list[str], shas: dict[str, str]) -> dict:
    """The store's entries for these files' bytes (those it has)."""
    if store is None:
        return {}
    found = {}
    for rel in rels:
        entry = store.get(rel, shas[rel])
        if entry is not None:
            found[rel] = entry
    return found


def _fill_cache(store, fresh: set[str], parsed: dict[str, list[Node]], shas: dict[str, str],
                terms, nodes: pa.Table, new_counts: dict[str, Counter], log: Logger) -> None:
    """Store the files parsed now (best effort: a store that cannot be written is skipped)."""
    from codenib.compiler.cache import CachedFile

    row_of = None
    try:
        for rel in sorted(fresh):
            file_nodes = parsed[rel]
            counts = []
            for n in file_nodes:
                c = new_counts.get(n.node_id)
                if c is None:       # counts reused from the earlier index: read them back
                    if row_of is None:
                        row_of = {nid: i for i, nid in enumerate(nodes.column("node_id").to_pylist())}
                    c = terms.counts_of(row_of[n.node_id])
                counts.append(c)
            store.put(rel, shas[rel], CachedFile(file_nodes, counts))
    except (OSError, UnicodeError, ValueError) as exc:
        log(f"warning: the parse cache {store.root} was not updated: {exc}")


def _count_texts(texts: list[str], config: TokenizerConfig, workers: "_Workers", progress: bool) -> list:
    """Term counts of each text, in worker processes when there are many."""
    from codenib.compiler.sparse import count_terms

    if workers.size <= 1 or len(texts) < PARALLEL_MIN_TEXTS:
        return count_terms(texts, config)
    chunks = _chunks([(t, config) for t in texts], workers.size * CHUNKS_PER_WORKER, lambda it: len(it[0]),
                     keep_order=True)
    results = workers.map(_count_chunk, chunks, desc="tokenize", unit="chunk", progress=progress)
    return [c for chunk in results for c in chunk]


def _count_chunk(items) -> list:
    """Worker task: term counts of each text."""
    from codenib.compiler.sparse import count_terms

    return count_terms([t for t, _ in items], items[0][1]) if items else []


def _nodes_of(table: pa.Table) -> list[Node]:
    """`Node` records of a nodes table (what the dense stage encodes)."""
    cols = table.to_pydict()
    names = NODES_SCHEMA.names
    return [Node(**{name: (tuple(cols[name][i] or ()) if name == "decorators" else cols[name][i])
                    for name in names}) for i in range(table.num_rows)]


def _chunks(items: list, n: int, size: Callable, keep_order: bool = False) -> list[list]:
    """`items` cut into at most `n` chunks of similar total size."""
    if not items:
        return []
    n = max(1, min(n, len(items)))
    if keep_order:
        total = sum(size(it) for it in items) or 1
        chunks, current, acc = [], [], 0
        for it in items:
            current.append(it)
            acc += size(it)
            if acc >= total * (len(chunks) + 1) / n and len(chunks) < n - 1:
                chunks.append(current)
                current = []
        chunks.append(current)
        return [c for c in chunks if c]
    # Largest first, each to the lightest chunk: the chunks finish at about the same time.
    bins: list[list] = [[] for _ in range(n)]
    loads = [0] * n
    for it in sorted(items, key=size, reverse=True):
        j = loads.index(min(loads))
        bins[j].append(it)
        loads[j] += size(it)
    return [b for b in bins if b]


class _Workers:
    """A pool of worker processes, started on first use (none when `size` is 1)."""

    def __init__(self, jobs: int | None):
        self.size = jobs if jobs is not None else len(os.sched_getaffinity(0))
        self._pool = None

    def __enter__(self) -> "_Workers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes (a later `map` starts new ones)."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def map(self, fn: Callable, chunks: list, desc: str, unit: str, progress: bool) -> list:
        """`fn` over each chunk in the workers; results in chunk order."""
        from codenib.progress import Progress

        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # fork where there is one: spawn and forkserver import the caller's main module
            # again, which breaks every script that calls `build_index` without a main guard.
            # The workers only parse and tokenize (no Arrow, no torch threads in them).
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
            self._pool = ProcessPoolExecutor(max_workers=self.size, mp_context=ctx)
        futures = [self._pool.submit(fn, chunk) for chunk in chunks]
        results = []
        with Progress(desc, len(futures), unit + "s", enabled=progress) as bar:
            for fut in futures:
                results.append(fut.result())
                bar.update(1)
        return results
