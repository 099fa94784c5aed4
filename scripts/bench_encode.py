#!/usr/bin/env python3
"""Benchmark: texts/s of each encoder backend against sentence-transformers (torch fp32), in one run.

* speed: node texts and queries encoded by sentence-transformers' own `encode` (batch 32,
  fp32 torch: the baseline) and by each backend through `Encoder`, interleaved chunk by chunk
  (each chunk runs every side, in rotating order) so that other load on a shared machine hits
  every side alike. Prints texts/s, the ratio of total wall time, the median of per-chunk
  ratios and the ratio of CPU time.
* agreement: per-text cosine of each backend's vector to the baseline's (min, 1st percentile,
  mean), against the bar (0.9999 fp32, 0.99 int8).
* waste: what the baseline's batching spends on padding, and what sorting by token length,
  encoding identical texts once and batching name texts apart remove.
* quality (--quality): indexes the dev corpora with each backend and prints node top-10
  overlap with torch's ranking and RR@10 per query kind (dense and auto modes).
* small job (--small-job INDEX [INDEX ...]): `codenib run` of the demo's 15 queries, every
  plan (--mode all), from a cold start, on Ray (--local-below 0) and by default (in this
  process below 256 queries), against the same queries in one fresh in-process loop; with
  the cold cost of each part (Python and CodeNib imports, Ray start, index load, encoder
  load) measured alone. Interleaved, fastest of --repeats.
* query batching (--query-batching): each graph backend's queries (ONNX Runtime, OpenVINO)
  encoded one per call against batches filled to 32 rows, the two ways that keep a query's
  vector independent of its batch (the backend's own way is marked), one query at a time, a
  bulk of short queries and a bulk of bug reports (--reports); fastest of --repeats.

Usage:
    python scripts/bench_encode.py [--indexes ~/.cache/codenib-dev/idx/click ~/.cache/codenib-dev/idx/jinja2]
        [--texts 2000] [--queries 2000] [--backends torch onnx onnx-int8 openvino] [--chunk 250]
        [--quality --corpus ~/.cache/codenib-dev/prepared --eval ../shared/eval/dev
         --index-root ~/.cache/codenib-dev/idx-encode]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from benchkit import Stopwatch, Timing, log, out, ratio, render_table, timed, timed_rounds

HOME_DEV = Path.home() / ".cache/codenib-dev"
BARS = {"fp32": 0.9999, "int8": 0.99}


def load_texts(indexes: list[Path], n_texts: int, n_queries: int, eval_dir: Path, seed: int = 0):
    """`n_texts` node texts sampled from the indexes, and `n_queries` queries: the dev sets'
    queries, then identifier-style queries made from node names (as lexical queries are)."""
    from codenib.core.tokens import split_identifier

    texts, names = [], []
    for idx in indexes:
        table = pq.read_table(idx / "nodes.parquet", columns=["text", "qualname"])
        texts += table.column("text").to_pylist()
        names += [q for q in table.column("qualname").to_pylist() if q]
    rng = np.random.default_rng(seed)
    nodes = [texts[i] for i in rng.choice(len(texts), min(n_texts, len(texts)), replace=False)]
    queries = []
    for qs in sorted(eval_dir.glob("*/queries.parquet")):
        queries += pq.read_table(qs, columns=["query"]).column("query").to_pylist()
    extra = [" ".join(w.lower() for w in split_identifier(n.split("#")[0].replace(".", "_")))
             for n in rng.permutation(names)]
    queries = (queries + extra)[:n_queries]
    return nodes, queries


def speed(sides: dict, texts: list[str], chunk: int, kind: str) -> dict:
    """Run every side over `texts` chunk by chunk, interleaved (the order rotates per chunk, as
    in `benchkit.timed_rounds`); returns vectors and per-chunk wall and CPU timings."""
    names = list(sides)
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    vectors = {n: [] for n in names}
    for ci, start in enumerate(range(0, len(texts), chunk)):
        part = texts[start:start + chunk]
        for n in names[ci % len(names):] + names[:ci % len(names)]:
            with Stopwatch() as sw:
                vectors[n].append(sides[n](part))
            wall[n].append(sw.wall)
            cpu[n].append(sw.cpu)
        done = min(start + chunk, len(texts))
        log(f"{kind}: {done}/{len(texts)} texts, every side")
    return {"vectors": {n: np.vstack(v) for n, v in vectors.items()},
            "wall": {n: Timing(tuple(v)) for n, v in wall.items()}, "cpu": {n: sum(v) for n, v in cpu.items()}}


def report_speed(run: dict, n: int, kind: str, base: str, precisions: dict) -> None:
    wall, cpu, vec = run["wall"], run["cpu"], run["vectors"]
    out(f"\n### {kind}: {n} texts\n")
    head = ("side", "texts/s", "x baseline (total wall)", "x baseline (median chunk)", "x baseline (CPU time)",
            "cosine min", "cosine p1", "cosine mean", "bar", "passes")
    rows = []
    for name, t in wall.items():
        cos = (vec[name] * vec[base]).sum(1)
        bar = BARS[precisions.get(name, "fp32")]
        total, base_total = sum(t.times), sum(wall[base].times)
        rows.append((name, f"{n / total:.1f}", ratio(base_total, total), f"{t.speedup_over(wall[base]):.2f}x",
                     ratio(cpu[base], cpu[name]), f"{cos.min():.5f}", f"{np.percentile(cos, 1):.5f}",
                     f"{cos.mean():.5f}", bar, "yes" if cos.min() >= bar else "NO"))
    out(render_table(head, rows, markdown=True))


def query_batching(backends: list[str], queries: list[str], reports: Path, rounds: int) -> None:
    """Queries encoded one per call (each alone, `single`) against batches filled to 32 rows
    (`fixed`), the backend's own way marked: one query at a time, a bulk of short queries and a
    bulk of bug reports (title and opening prose, as `bug_localisation` encodes them), interleaved."""
    import dataclasses
    import statistics

    from codenib.engines.embed import Encoder
    from codenib.engines.models import ModelSpec
    from codenib.model import localise_inputs
    from codenib.model.reports.report import read_report

    long = [localise_inputs.dense_text(read_report(q)) for q in
            pq.read_table(reports, columns=["query"]).column("query").to_pylist()] if reports.is_file() else []
    for b in backends:
        enc = Encoder(ModelSpec.for_model(None), "cpu", backend=b)
        own = enc.backend.query_batches
        modes = {f"one per call{' (ours)' if own == 'single' else ''}": dataclasses.replace(enc.backend, query_batches="single"),
                 f"filled to 32 rows{' (ours)' if own == 'fixed' else ''}": dataclasses.replace(enc.backend,
                                                                                          query_batches="fixed")}
        for m in modes.values():    # each way's first call is not timed
            enc.backend = m
            enc.encode_queries(queries[:2] + long[:2])
        cases = {"a short query alone (median of 20, ms)": (queries[:20], True),
                 "a bug report alone (median of 20, ms)": (long[:20], True),
                 f"{len(queries)} short queries (s)": (queries, False),
                 f"{len(long)} bug reports (s)": (long, False)}
        got = {m: {c: [] for c in cases} for m in modes}
        vectors = {}
        for r in range(rounds):
            for m in (list(modes) if r % 2 == 0 else list(modes)[::-1]):
                enc.backend = modes[m]
                for c, (texts, alone) in cases.items():
                    if not texts:
                        continue
                    if alone:
                        times = []
                        for t in texts:
                            with Stopwatch() as sw:
                                enc.encode_queries([t])
                            times.append(sw.wall * 1000)
                        got[m][c].append(statistics.median(times))
                    else:
                        with Stopwatch() as sw:
                            vectors[m, c] = enc.encode_queries(texts)
                        got[m][c].append(sw.wall)
        out(f"\n### query batching, codenib {b} ({rounds} rounds, best shown)\n")
        ours, old = list(modes)     # one per call first; the speed-up is its gain over 32 rows
        rows = [(c, f"{min(got[ours][c]):.3g}", f"{min(got[old][c]):.3g}", ratio(min(got[old][c]), min(got[ours][c])))
                for c in cases if got[ours][c]]
        out(render_table(("case", ours, old, "one per call's speed-up"), rows, markdown=True))
        diff = max(float(np.abs(vectors[ours, c] - vectors[old, c]).max()) for c in cases if (ours, c) in vectors)
        out(f"- largest difference between the two ways' query vectors: {diff:.2g}")


def waste(st_model, indexes: list[Path], nodes: list[str], batch: int = 32) -> None:
    """Padding of the baseline's batches (sorted by characters) against token-sorted ones,
    truncation, duplicates and name texts, on the sampled node texts and the whole indexes."""
    from codenib.compiler.dense import name_text
    from codenib.core.types import Node

    tok = st_model.tokenizer
    limit = st_model.max_seq_length
    full = [len(x) for x in tok(nodes, truncation=False)["input_ids"]]
    lengths = np.minimum(np.array(full), limit)

    def padding(order):
        real = padded = 0
        for s in range(0, len(order), batch):
            b = lengths[order[s:s + batch]]
            real += b.sum()
            padded += b.max() * len(b)
        return 1 - real / padded

    by_chars = np.argsort([-len(t) for t in nodes], kind="stable")
    by_tokens = np.argsort(-lengths, kind="stable")
    out(f"\n### less to encode ({len(nodes)} sampled node texts, batches of {batch})\n")
    out(f"- padding share, batches sorted by characters (sentence-transformers): {padding(by_chars):.1%}")
    out(f"- padding share, batches sorted by tokens (codenib): {padding(by_tokens):.1%}")
    out(f"- texts over the model's limit ({limit} tokens): {(np.array(full) > limit).mean():.1%}; "
          f"tokens cut: {1 - lengths.sum() / sum(full):.1%} (never encoded by either side)")
    for idx in indexes:
        rows = pq.read_table(idx / "nodes.parquet").to_pylist()
        node_objs = [Node(**{k: v for k, v in r.items() if k != "decorators"}) for r in rows]
        bodies = [n.text for n in node_objs]
        names = [name_text(n) for n in node_objs]
        both = bodies + names
        name_len = np.mean([len(x) for x in tok(names[:500])["input_ids"]])
        out(f"- {idx.name}: {len(bodies)} nodes; identical body texts {len(bodies) - len(set(bodies))}, "
              f"identical name texts {len(names) - len(set(names))}, distinct texts of both fields "
              f"{len(set(both))} of {len(both)}; name texts average {name_len:.0f} tokens")


def quality(args, backends: list[str]) -> None:
    """Index the dev corpora with each backend; top-10 overlap with torch and RR@10 per kind."""
    from codenib.compiler.build import build_index
    from codenib.compiler.build_options import BuildOptions
    from codenib.engines import models
    from codenib.index.loaded import load_index
    from codenib.model.session import RetrievalSession
    from codenib.model.planner import plan_options
    kinds = ("semantic", "lexical", "structural")
    modes = ("dense", "auto")
    out("\n### dev-set quality per backend (node RR@10 per kind; overlap = mean |top-10 ∩ torch top-10| / 10)\n")
    out("| package | backend | index s | dense s | mode | semantic | lexical | structural | overall | top-10 overlap |")
    out("|---|---|---|---|---|---|---|---|---|---|")
    for pkg in args.packages:
        queries = pq.read_table(args.eval / pkg / "queries.parquet").to_pylist()
        gold: dict[str, set[str]] = {}
        for r in pq.read_table(args.eval / pkg / "qrels.parquet").to_pylist():
            if r["relevance"] > 0:
                gold.setdefault(r["qid"], set()).add(r["node_id"])
        reference: dict[str, list[list[str]]] = {}
        for backend in ["torch"] + [b for b in backends if b != "torch"]:
            folder = args.index_root / backend / pkg
            secs = dense_secs = float("nan")
            if not (folder / "manifest.json").is_file():
                log(f"indexing {pkg} with {backend} -> {folder}")
                models.MODEL_CACHE.clear()
                summary, secs = timed(lambda: build_index(args.corpus / pkg, folder,
                                                          BuildOptions(encoder=backend, progress=False)))
                dense_secs = summary.seconds.get("dense", float("nan"))
            index = load_index(folder)
            for mode in modes:
                session = RetrievalSession.of(index)
                results = session.run([q["query"] for q in queries], plan_options("balanced", mode), k=10)
                ranked = [[c.node_id for c in r.candidates[:10]] for r in results]
                key = f"{mode}"
                if backend == "torch":
                    reference[key] = ranked
                overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ranked, reference[key])])
                rr = {k: [] for k in kinds}
                for q, r in zip(queries, ranked):
                    g = gold.get(q["qid"], set())
                    rr[q["kind"]].append(next((1 / i for i, d in enumerate(r, 1) if d in g), 0.0))
                allv = [v for vs in rr.values() for v in vs]
                cells = " | ".join(f"{np.mean(rr[k]):.3f}" for k in kinds)
                out(f"| {pkg} | {backend} | {secs:.0f} | {dense_secs:.0f} | {mode} | {cells} | "
                      f"{np.mean(allv):.3f} | {overlap:.3f} |")


LOOP = """
import dataclasses, sys
from codenib.batch.queries import read_query_set
from codenib.model.session import RetrievalSession
from codenib.batch.worker import ShardOptions, process_shard
from codenib.model.planner import plan_options, plan_rows
path, queries = sys.argv[1], sys.argv[2]
session = RetrievalSession.load(path, device="cpu")
qs = read_query_set(queries, index=path)
qs = dataclasses.replace(qs, rows=plan_rows(qs.rows, plan_options("balanced", "all"),
                                            {r.index_path: session.capabilities for r in qs.rows}))
for shard in qs.shards(256):
    process_shard(shard, session, ShardOptions(mode="all"))
"""


def small_job(indexes: list[Path], repeats: int) -> None:
    """Cold `codenib run` of 15 queries, all plans, against one fresh in-process loop."""
    import os
    import subprocess
    import tempfile

    repo = Path(__file__).resolve().parents[1]
    queries = repo / "codenib" / "data" / "demo_queries.jsonl"
    env = {**os.environ, "PYTHONPATH": str(repo)}
    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="codenib-small-job-"))
    out("\n### small job: 15 queries, --mode all, cold processes (fastest of "
        f"{repeats} interleaved rounds; seconds)\n")
    head = ("index (encoder)", "python + codenib imports", "Ray start + stop", "index load", "query encoder load",
            "in-process loop", "`codenib run` on Ray", "`codenib run` default", "Ray / loop", "default / loop")
    table = []
    ray_init = ("import ray; ray.init(num_cpus=2, include_dashboard=False, _node_ip_address='127.0.0.1', "
                "log_to_driver=False, configure_logging=False); ray.shutdown()")
    runs = iter(range(1_000_000))

    def probe(name: str, make) -> None:
        done = subprocess.run(make(), env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{name} failed: {done.stderr[-2000:]}")

    for index in indexes:
        load = f"from codenib.index.loaded import load_index; i = load_index({str(index)!r}, device='cpu')"

        def run_cmd(extra, index=index):
            return [py, "-m", "codenib.commands.cli", "run", "--queries", str(queries), "--index", str(index),
                    "--out", str(work / f"r{next(runs)}"), "--mode", "all", "--quiet", *extra]

        probes = {
            "imports": lambda: [py, "-c", "import codenib.batch.driver, codenib.index.loaded"],
            "ray": lambda: [py, "-c", ray_init],
            "index": lambda: [py, "-c", load],
            "encoder": lambda: [py, "-c", load + "; i.encoder()"],
            "loop": lambda: [py, "-c", LOOP, str(index), str(queries)],
            "ray_job": lambda: run_cmd(["--local-below", "0"]),
            "default": lambda: run_cmd([]),
        }
        timings = timed_rounds({name: partial(probe, name, make) for name, make in probes.items()}, repeats,
                               desc=f"small job {index.name}")
        best = {name: t.best for name, t in timings.items()}
        backend = "?"
        with contextlib.suppress(Exception):
            import json

            backend = (json.loads((index / "manifest.json").read_text())["model"].get("encoder") or {}).get(
                "backend", "torch")
        b = best
        table.append((f"{index.parent.name}/{index.name} ({backend})", *(f"{b[k]:.1f}" for k in probes),
                      f"{b['ray_job'] / b['loop']:.2f}", f"{b['default'] / b['loop']:.2f}"))
    out(render_table(head, table, markdown=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--indexes", nargs="+", type=Path, default=[HOME_DEV / "idx/click", HOME_DEV / "idx/jinja2"],
                    help="indexes whose node texts are encoded (default: the click and jinja2 dev indexes)")
    ap.add_argument("--eval", type=Path, default=Path(__file__).resolve().parents[2] / "shared/eval/dev",
                    help="dev query sets and judgments (queries for the speed test, --quality's judgments)")
    ap.add_argument("--texts", type=int, default=2000, help="node texts encoded per side")
    ap.add_argument("--queries", type=int, default=2000, help="queries encoded per side")
    ap.add_argument("--chunk", type=int, default=250, help="texts per interleaved chunk")
    ap.add_argument("--backends", nargs="+", default=["torch", "onnx", "onnx-int8", "openvino"],
                    help="backends compared with sentence-transformers (openvino is skipped when not installed)")
    ap.add_argument("--skip-speed", action="store_true", help="no speed or agreement test (with --quality or --small-job)")
    ap.add_argument("--quality", action="store_true", help="index the dev corpora per backend: top-10 overlap and RR@10")
    ap.add_argument("--corpus", type=Path, default=HOME_DEV / "prepared", help="--quality: the prepared dev corpora")
    ap.add_argument("--index-root", type=Path, default=HOME_DEV / "idx-encode", help="--quality: where its indexes go")
    ap.add_argument("--packages", nargs="+", default=["click", "jinja2"], help="--quality: dev corpora to index")
    ap.add_argument("--small-job", nargs="+", type=Path, default=None, metavar="INDEX",
                    help="time a cold `codenib run` of the demo queries over these indexes against an in-process loop")
    ap.add_argument("--repeats", type=int, default=2, help="--small-job: rounds (the fastest is kept)")
    ap.add_argument("--query-batching", action="store_true",
                    help="queries one per call against batches filled to 32 rows, alone and in bulk")
    ap.add_argument("--reports", type=Path, default=Path(__file__).resolve().parents[2]
                    / "shared/eval/swebench-dev/queries.parquet", help="--query-batching: long queries (bug reports)")
    args = ap.parse_args(argv)

    from sentence_transformers import SentenceTransformer

    from codenib.engines.backends import BACKENDS, cpu_threads
    from codenib.engines.embed import Encoder
    from codenib.engines.models import ModelSpec, model_path

    backends = [b for b in args.backends if BACKENDS[b].available()]
    missing = sorted(set(args.backends) - set(backends))
    out(f"# encoder benchmark ({cpu_threads()} cores; missing runtimes: {', '.join(missing) or 'none'})")
    if not args.skip_speed:
        import torch

        torch.set_num_threads(cpu_threads())
        st = SentenceTransformer(model_path("all-MiniLM-L6-v2"), device="cpu", local_files_only=True)
        spec = ModelSpec.for_model(None)
        sides = {"sentence-transformers": lambda t: st.encode(t, batch_size=32, convert_to_numpy=True,
                                                              normalize_embeddings=True)}
        precisions = {}
        for b in backends:
            enc = Encoder(spec, "cpu", backend=b)
            enc.encode_documents(["warm-up"])
            sides[f"codenib {b}"] = enc.encode_documents
            precisions[f"codenib {b}"] = BACKENDS[b].precision
        nodes, queries = load_texts(args.indexes, args.texts, args.queries, args.eval)
        waste(st, args.indexes, nodes)
        run = speed(sides, nodes, args.chunk, "node texts")
        report_speed(run, len(nodes), "node texts", "sentence-transformers", precisions)
        qsides = {"sentence-transformers": sides["sentence-transformers"]}
        for b in backends:
            enc = Encoder(spec, "cpu", backend=b)
            qsides[f"codenib {b}"] = enc.encode_queries
        run = speed(qsides, queries, args.chunk * 2, "queries")
        report_speed(run, len(queries), "queries", "sentence-transformers", precisions)
    if args.query_batching:
        _, queries = load_texts(args.indexes, 0, args.queries, args.eval)
        query_batching([b for b in backends if BACKENDS[b].query_batches in ("single", "fixed")], queries, args.reports,
                       args.repeats)
    if args.quality:
        quality(args, backends)
    if args.small_job:
        small_job(args.small_job, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
