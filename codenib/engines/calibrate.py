"""`--encoder auto`: the fastest backend that passes its agreement bar on this machine.

Candidates are the backends that met the whole bar in scripts/bench_encode.py (per-text
cosine, dev-set top-10 overlap and RR@10); the per-text part is checked again here.

Measured once per (model files, CPU, runtime versions) on a fixed sample of code and
query texts, and remembered in the encoder cache (`calibration.json`); CUDA keeps torch.
`scripts/bench_encode.py` runs the full check (dev-set overlap and RR@10) behind the bar.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
import uuid
from pathlib import Path
from typing import Callable

from codenib.engines.backends import BACKENDS, get_backend

Logger = Callable[[str], None]
#: Source chunks of this many lines make up the speed sample (like function and class nodes).
CHUNK_LINES = 12
SAMPLE_CHUNKS = 24
#: Timed passes per backend, interleaved; the fastest pass counts (other processes share the cores).
PASSES = 2


def choose_backend(spec, device: str, log: Logger | None = None, *, encoder: Callable) -> str:
    """The backend `auto` means for `spec` on `device` (measured now if not remembered).

    `encoder` makes the candidates (`codenib.engines.embed.Encoder`, which calls this: passed
    in, so that the two modules do not import each other)."""
    if device == "cuda":
        return "torch"
    from codenib.engines.export.cache import encoders_dir, local_model_folder, source_digest

    log = log or _stderr
    candidates = [name for name, b in BACKENDS.items() if b.auto and b.available()]
    try:
        source = source_digest(local_model_folder(spec.name))
    except Exception:  # noqa: BLE001 - a model that cannot be exported: torch is the only choice
        return "torch"
    key = _key(spec, source, candidates)
    path = encoders_dir() / "calibration.json"
    remembered = _read(path).get(key)
    if remembered:
        return remembered["choice"]
    log(f"encoder auto: measuring {', '.join(candidates)} on this machine (once; remembered in {path})")
    result = calibrate(spec, candidates, log, encoder)
    table = _read(path)
    table[key] = result
    _write(path, table)
    log(f"encoder auto: {result['choice']}  (" + ", ".join(
        f"{n} {m['texts_per_s']:.1f} texts/s, worst cosine {m['min_cosine']:.5f}"
        + ("" if m["passes"] else " FAILS the bar") for n, m in result["backends"].items()) + ")")
    return result["choice"]


def calibrate(spec, candidates: list[str], log: Logger, encoder: Callable) -> dict:
    """Speed and agreement of each candidate on the sample; the choice is the fastest that passes.
    `encoder(spec, device, backend=, log=)` makes one (`Encoder`)."""
    texts = sample_texts()
    encoders = {}
    for name in candidates:
        try:
            encoders[name] = encoder(spec, "cpu", backend=name, log=log)
        except Exception as exc:  # noqa: BLE001 - a backend that cannot load is not a candidate
            log(f"encoder auto: {name} unavailable: {type(exc).__name__}: {exc}")
    reference = encoders["torch"].encode_documents(texts)
    for enc in encoders.values():
        enc.encode_documents(texts[:4])   # warm-up: first-call allocations and shape compilation
    seconds = {name: float("inf") for name in encoders}
    worst = {name: 1.0 for name in encoders}
    for _ in range(PASSES):
        for name, enc in encoders.items():
            t0 = time.perf_counter()
            vectors = enc.encode_documents(texts)
            seconds[name] = min(seconds[name], time.perf_counter() - t0)
            worst[name] = min(worst[name], float((vectors * reference).sum(1).min()))
    backends = {name: {"texts_per_s": len(texts) / seconds[name], "min_cosine": worst[name],
                       "passes": worst[name] >= get_backend(name).min_cosine} for name in encoders}
    passing = [n for n, m in backends.items() if m["passes"]]
    choice = max(passing, key=lambda n: backends[n]["texts_per_s"])
    return {"choice": choice, "backends": backends, "texts": len(texts),
            "measured": time.strftime("%Y-%m-%dT%H:%M:%S")}


def sample_texts() -> list[str]:
    """Code chunks of CodeNib's own source (always installed) and the demo's questions."""
    import codenib

    root = Path(codenib.__file__).resolve().parent
    chunks = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        chunks.extend("\n".join(lines[i:i + CHUNK_LINES]) for i in range(0, len(lines), CHUNK_LINES * 8))
    step = max(1, len(chunks) // SAMPLE_CHUNKS)
    texts = [c for c in chunks[::step] if c.strip()][:SAMPLE_CHUNKS]
    queries = root / "data" / "demo_queries.jsonl"
    if queries.is_file():
        texts += [json.loads(line)["query"] for line in queries.read_text(encoding="utf-8").splitlines() if line.strip()]
    return texts


def _key(spec, source: str, candidates: list[str]) -> str:
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for name in sorted({BACKENDS[c].module for c in candidates} | {"torch"}):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "?"
    data = {"model": spec.name, "prompt": spec.document_prompt, "max_seq_length": spec.max_seq_length,
            "source": source, "candidates": candidates, "versions": versions, "cpu": _cpu_signature()}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:24]


def _cpu_signature() -> str:
    """The CPU model, its vector extensions and the cores this process may use."""
    model, flags = platform.processor(), ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = " ".join(sorted(f for f in line.split(":", 1)[1].split()
                                        if f.startswith(("avx", "amx", "fma", "sse4", "f16c"))))
                break
    except OSError:
        pass
    from codenib.engines.backends import cpu_threads

    return f"{model}|{flags}|{cpu_threads()}"


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _write(path: Path, table: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(json.dumps(table, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def _stderr(message: str) -> None:
    import sys

    print(message, file=sys.stderr, flush=True)
