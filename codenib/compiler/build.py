"""`build_index`: repository -> index folder (nodes, edges, sparse, dense, manifest)."""

from __future__ import annotations

import hashlib
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pyarrow.parquet as pq

from codenib import artifact
from codenib.compiler.parse import ParsedFile, parse_file, parse_syntax
from codenib.compiler.resolve import Resolver, collect_edges
from codenib.compiler.walk import SourceFile, walk_repository
from codenib.errors import BadInputError
from codenib.tokens import TokenizerConfig
from codenib.types import EDGE_TYPES, NODE_KINDS, edges_to_table, nodes_to_table


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """What the `index` command builds; the defaults are the offline defaults."""

    model: str | None = None            # None: the packaged all-MiniLM-L6-v2
    dense: bool = True
    device: str = "auto"
    encoder: str = "auto"               # torch | onnx | onnx-int8 | openvino | auto (codenib.engines.backends)
    reuse: Path | None = None           # a previous index whose vectors may be reused
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    ann: str = "flat"                   # flat (exact) | hnsw
    batch_size: int | None = None     # None: 32 on the CPU, 256 on CUDA
    max_seq_length: int | None = None
    progress: bool = True
    force: bool = False                 # replace an index folder that also holds others' files


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
    seconds: dict[str, float] = {}

    t0 = time.perf_counter()
    files, skipped = walk_repository(repo)
    if not files:
        raise BadInputError("no Python files found in the repository", path=str(repo),
                            fix="pass the root of a repository that holds .py files")
    # A root that is itself a package (indexing `codenib/`) keeps its name in module paths.
    root_package = repo.resolve().name if (repo / "__init__.py").is_file() else None
    # The graph's first pass records each file's bindings as it is parsed and lets its tree
    # go; the second parses one file at a time again: no stage holds every tree at once.
    resolver = Resolver([f.rel_path for f in files], root_package)
    parsed = _parse_all(files, resolver, options.progress)
    seconds["parse"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    edges = collect_edges(resolver, _parsed_again(files, parsed))
    del resolver    # its bindings would otherwise stay alive through the sparse and dense stages
    seconds["graph"] = time.perf_counter() - t0

    nodes = sorted((n for pf in parsed for n in pf.nodes), key=lambda n: n.node_id)
    parse_errors = [(pf.rel_path, pf.parse_error) for pf in parsed if pf.parse_error]
    for path, err in parse_errors:
        log(f"warning: {path}: {err}; indexed as a file node without definitions")

    with artifact.atomic_index_dir(out, options.force) as staging:
        pq.write_table(nodes_to_table(nodes), staging / artifact.NODES_FILE)
        pq.write_table(edges_to_table(edges), staging / artifact.EDGES_FILE)

        t0 = time.perf_counter()
        from codenib.compiler.sparse import build_sparse

        build_sparse([n.text for n in nodes], options.tokenizer, staging / artifact.SPARSE_DIR)
        seconds["sparse"] = time.perf_counter() - t0

        dense_info = None
        if options.dense:
            t0 = time.perf_counter()
            from codenib.compiler.dense import build_dense

            dense_info = build_dense(nodes, staging / artifact.DENSE_DIR, options, log)
            seconds["dense"] = time.perf_counter() - t0

        nodes_by_kind = Counter(n.kind for n in nodes)
        edges_by_type = Counter()
        for e in edges:
            edges_by_type[e.type] += 1
        manifest = artifact.write_manifest(staging, {
            "source_root_name": repo.resolve().name,
            "root_package": root_package,
            "git_commit": artifact.git_commit(repo.resolve()),
            "tokenizer": options.tokenizer.to_dict(),
            "model": dense_info,
            "counts": {
                "files": len(files),
                "nodes": len(nodes),
                "nodes_by_kind": {k: nodes_by_kind.get(k, 0) for k in NODE_KINDS},
                "edges_by_type": {t: edges_by_type.get(t, 0) for t in EDGE_TYPES},
                "parse_errors": len(parse_errors),
                "skipped_files": len(skipped),
            },
            "build_seconds": {k: round(v, 3) for k, v in seconds.items()},
        })
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
    )


def _parse_all(files: list[SourceFile], resolver: Resolver, progress: bool) -> list[ParsedFile]:
    """Parse every file into nodes, recording its bindings in `resolver` (trees let go)."""
    from codenib.progress import Progress

    parsed = []
    with Progress("parse", len(files), "files", enabled=progress) as bar:
        for f in files:
            pf = parse_file(f)
            resolver.add_file(pf, trim=True)
            parsed.append(pf)
            bar.update(1)
    return parsed


def _parsed_again(files: list[SourceFile], parsed: list[ParsedFile]) -> Iterator[ParsedFile]:
    """Each file's tree and definitions again, one file at a time, for the graph's pass 2.

    Raises:
        BadInputError: a file changed (or vanished) since it was parsed.
    """
    for source, pf in zip(files, parsed):
        if pf.parse_error is not None:
            yield pf        # nothing to walk: its contains edges only
            continue
        try:
            raw = source.abs_path.read_bytes()
        except OSError:
            raw = None
        if raw is None or hashlib.sha256(raw).hexdigest() != pf.file_node.content_sha256:
            raise BadInputError("file changed while the repository was being indexed",
                                path=pf.rel_path, fix="index again once nothing writes to it")
        yield parse_syntax(pf.rel_path, raw)
