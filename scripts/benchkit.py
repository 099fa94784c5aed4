"""Timing and tables shared by every benchmark script under scripts/ (bench_*.py).

Timing: `Stopwatch` (wall and CPU seconds, the CPU of waited-for child processes included;
Ray's worker processes are not this process's children: `tree_cpu_seconds` is the clock for
work on a Ray this process started, its every descendant sampled, ended ones included),
`best_of` (best wall time of N calls), `median_of` (median after a warm-up), `timed_rounds` (interleaved A/B/... rounds whose
order rotates, so load that drifts hits every side alike; wall seconds, and CPU seconds by a
clock of choice) and `Timing` (median, best and the median of paired speed-ups). Tables: `render_table` (fixed width or Markdown, any columns)
`rate_table` (each side's median and best time, its rate and its ratio to a baseline side)
and `Row` / `summary_table`, the metric | ours | baseline | ratio | target | pass/fail table
that ends the index benchmarks. Not part of the codenib package: scripts import it as a
sibling module (`python scripts/bench_x.py` puts scripts/ on sys.path).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

_T0 = time.perf_counter()


def log(msg: str) -> None:
    """Progress line on stderr, with the time since start."""
    print(f"[bench {time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def out(msg: str = "") -> None:
    """A result line on stdout."""
    print(msg, flush=True)


def elapsed() -> float:
    """Seconds since this module was first imported (the benchmark's start)."""
    return time.perf_counter() - _T0


# --- timing -------------------------------------------------------------------------------------

def cpu_seconds() -> float:
    """User + system seconds of this process and of its waited-for children so far."""
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def peak_rss_mb() -> float:
    """This process's peak resident set size so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def children_peak_rss_mb() -> float:
    """The largest waited-for child process's peak resident set size (MB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _tree_times(root: int) -> dict[tuple[int, int], int]:
    """Clock ticks of user + system time of `root` and each live descendant, keyed by (pid,
    start time): a pid reused later is another process."""
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[int, int]] = {}
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                # The fields after the command (which may hold spaces and parentheses): state is
                # [0], ppid [1], utime and stime [11] and [12], start time [19].
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue   # it ended meanwhile
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        stats[pid] = (int(fields[19]), int(fields[11]) + int(fields[12]))
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            start, ticks = stats[pid]
            found[(pid, start)] = ticks
        todo.extend(children.get(pid, ()))
    return found


class TreeClock:
    """CPU seconds (user + system) of this process and every descendant it has had since the
    clock's first reading: a clock for work on a Ray this process started (`ray.init()`
    without an address runs GCS, raylet, workers and actors as its descendants), which
    `cpu_seconds` does not see. The raylet never waits for its workers' CPU, so a thread
    samples the process tree every `interval` seconds and a process that ended counts with
    its last sample (at most `interval` of its last work is missed). A cluster joined by
    address is not counted. Linux only (/proc); 0.0 elsewhere."""

    def __init__(self, interval: float = 0.5):
        import threading

        self.interval = interval
        self._seen: dict[tuple[int, int], int] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        now = _tree_times(os.getpid())
        with self._lock:
            self._seen.update(now)

    def _run(self) -> None:
        while True:
            time.sleep(self.interval)
            self._sample()

    def __call__(self) -> float:
        if self._thread is None:
            import threading

            self._thread = threading.Thread(target=self._run, name="benchkit-tree-clock", daemon=True)
            self._thread.start()
        self._sample()
        with self._lock:
            return sum(self._seen.values()) / os.sysconf("SC_CLK_TCK")


#: The process-tree CPU clock (`TreeClock`) the benchmarks on Ray share.
tree_cpu_seconds = TreeClock()


class Stopwatch:
    """`with Stopwatch() as sw: ...` then `sw.wall` and `sw.cpu` (seconds; the CPU seconds
    count child processes, on a loaded machine the wall time mostly measures others).
    `clock`: the CPU clock (default `cpu_seconds`; `tree_cpu_seconds` for work on Ray)."""

    wall: float = 0.0
    cpu: float = 0.0

    def __init__(self, clock: Callable[[], float] = cpu_seconds):
        self._clock = clock

    def __enter__(self) -> "Stopwatch":
        self._wall0, self._cpu0 = time.perf_counter(), self._clock()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall0
        self.cpu = self._clock() - self._cpu0


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """`fn()`'s result and its wall seconds."""
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def best_of(fn: Callable[[], Any], repeats: int) -> float:
    """The best wall seconds of `repeats` calls (noise only ever adds time)."""
    return min(timed(fn)[1] for _ in range(max(1, repeats)))


def median_of(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> float:
    """The median wall seconds of `repeats` calls, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    return Timing(tuple(timed(fn)[1] for _ in range(max(1, repeats)))).median


@dataclass(frozen=True, slots=True)
class Timing:
    """Wall times of one function over interleaved rounds (and its CPU times, when a CPU
    clock was given)."""

    times: tuple[float, ...]
    cpu: tuple[float, ...] = ()

    @property
    def cpu_median(self) -> float:
        return Timing(self.cpu).median if self.cpu else float("nan")

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        ordered = sorted(self.times)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2

    def speedup_over(self, baseline: "Timing") -> float:
        """Median over rounds of baseline time / our time: each round's pair ran back to back,
        so load from other processes that lasts longer than a round cancels out."""
        return Timing(tuple(b / o for b, o in zip(baseline.times, self.times))).median

    def cpu_saving_over(self, baseline: "Timing") -> float:
        """Median over rounds of baseline CPU / our CPU (above 1: we spend less CPU)."""
        pairs = tuple(b / o for b, o in zip(baseline.cpu, self.cpu) if o > 0)
        return Timing(pairs).median if pairs else float("nan")


def timed_rounds(fns: dict[str, Callable[[], Any]], repeats: int, desc: str = "rounds",
                 progress: bool = True, cpu: Callable[[], float] | None = None) -> dict[str, Timing]:
    """Time each function once per round for `repeats` rounds; each round rotates the order.
    `cpu`: a CPU clock (`cpu_seconds`, `tree_cpu_seconds`) read around each call too."""
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    rounds: Any = range(repeats)
    if progress:
        from tqdm import tqdm

        rounds = tqdm(rounds, desc=desc, unit="round", file=sys.stderr, leave=False)
    for r in rounds:
        for name in names[r % len(names):] + names[:r % len(names)]:
            with Stopwatch(cpu or (lambda: 0.0)) as sw:
                fns[name]()
            times[name].append(sw.wall)
            cpus[name].append(sw.cpu)
    return {name: Timing(tuple(times[name]), tuple(cpus[name]) if cpu else ()) for name in names}


def qps(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f} q/s" if seconds > 0 else "inf"


def describe(t: Timing, n: int) -> str:
    return f"median {t.median:.3f} s ({qps(n, t.median)}), best {t.best:.3f} s ({qps(n, t.best)})"


def load_note(when: str) -> str | None:
    """A warning when other processes keep the CPUs busy (the timings then wobble)."""
    try:
        load1 = float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    cpus = multiprocessing.cpu_count()
    if load1 < 0.5 * cpus:
        return None
    return (f"WARNING: load average {load1:.1f} on {cpus} CPUs {when}: other processes compete for the "
            "CPUs; ratios are medians of back-to-back pairs, absolute rates are low")


def run_isolated(fn: Callable[..., Any], *args: Any) -> Any:
    """Run `fn(*args)` in a fresh process, so its peak memory and CPU are its own."""
    ctx = multiprocessing.get_context("spawn")  # fork after torch/faiss threads start can hang
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(fn, *args).result()


# --- tables -------------------------------------------------------------------------------------

def render_table(head: Sequence[str], rows: Sequence[Sequence[Any]], markdown: bool = False,
                 right: Sequence[int] = ()) -> str:
    """Rows under a header: fixed width (`a | b` with a `-+-` rule; columns in `right` are
    right-aligned) or, with `markdown`, a Markdown table. Cells are str()-ed."""
    cells = [[str(c) for c in head]] + [[str(c) for c in row] for row in rows]
    if markdown:
        lines = ["| " + " | ".join(row) + " |" for row in cells]
        lines.insert(1, "|" + "|".join("---" for _ in head) + "|")
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
    lines = [" | ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(row))
             for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


RATE_HEAD = ("side", "median s", "best s", "rate (median)", "ratio")
CPU_HEAD = ("CPU s (median)", "CPU ratio")


def rate_table(timings: dict[str, Timing], n: int, baseline: str, unit: str = "q/s") -> str:
    """side | median s | best s | rate (median) | ratio: one row per side of `timed_rounds`; the
    ratio is the median of per-round paired speed-ups over `baseline` (above 1: faster). With
    CPU times, also | CPU s (median) | CPU ratio (baseline CPU / ours, median of rounds)."""
    base = timings[baseline]
    with_cpu = all(t.cpu for t in timings.values())
    rows = []
    for name, t in timings.items():
        row = [name, f"{t.median:.3f}", f"{t.best:.3f}", f"{n / t.median:,.1f} {unit}" if t.median > 0 else "inf",
               f"{fmt_ratio(t.speedup_over(base))}"]
        if with_cpu:
            row += [f"{t.cpu_median:.1f}", f"{fmt_ratio(t.cpu_saving_over(base))}"]
        rows.append(row)
    return render_table(RATE_HEAD + (CPU_HEAD if with_cpu else ()), rows, right=(1, 2, 3, 4, 5, 6))


def fmt_ratio(value: float) -> str:
    """A ratio as `1.23x`; below 0.1, three significant digits (a tiny job's 0.0042x is not 0.00x)."""
    if value >= 0.1 or value <= 0 or not math.isfinite(value):
        return f"{value:.2f}x"
    return f"{value:.{2 - math.floor(math.log10(value))}f}x"


def ratio(baseline: float, ours: float) -> str:
    """`baseline / ours` as `1.23x` (a speed-up when both are times), `-` when undefined."""
    return fmt_ratio(baseline / ours) if ours else "-"


@dataclass(slots=True)
class Row:
    """One line of a summary table."""

    metric: str
    ours: str
    baseline: str = "-"
    ratio: float | None = None
    target: float | None = None
    status: str | None = None      # overrides the ratio-vs-target verdict

    def verdict(self) -> str:
        if self.status is not None:
            return self.status
        if self.target is None or self.ratio is None:
            return "info"
        return "pass" if self.ratio >= self.target else "FAIL"


SUMMARY_HEAD = ("metric", "ours", "baseline", "ratio", "target", "pass/fail")


def summary_table(rows: Sequence[Row]) -> str:
    """Fixed-width table: metric | ours | baseline | ratio | target | pass/fail."""
    return render_table(SUMMARY_HEAD, [
        (r.metric, r.ours, r.baseline, "-" if r.ratio is None else fmt_ratio(r.ratio),
         "-" if r.target is None else f">= {r.target:.2f}x", r.verdict())
        for r in rows])


def finish(rows: Sequence[Row], title: str, strict: bool, end_note: bool = False) -> int:
    """Print the summary table and the total time; the exit status (1 with `strict` when a
    target is missed)."""
    out(f"\n== summary: {title} ==")
    out(summary_table(rows))
    note = load_note("at the end") if end_note else None
    out(f"\ntotal benchmark time {elapsed():.0f} s" + (f"\n{note}" if note else ""))
    return 1 if strict and any(r.verdict() == "FAIL" for r in rows) else 0
