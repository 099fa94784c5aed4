"""Worker processes for the build's parsing and tokenizing: a pool started on first use, and
work cut into chunks of similar size.

Workers die with the process that started them (a `kill -9` of `codenib index` left them
running, 160-195 MB each): on Linux the kernel sends them SIGKILL when it dies
(`PR_SET_PDEATHSIG`), elsewhere a thread in each worker exits when its parent is gone. An
exception in a worker reaches the caller as a `WorkerError` with the worker's traceback (a
pygit2 error cannot be pickled, and the pool raised a `PicklingError` instead).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from typing import Callable

from codenib.core.errors import CodeNibError

#: Work is cut into this many chunks per worker, so that one slow chunk does not idle the rest.
CHUNKS_PER_WORKER = 4
#: Seconds between a worker's checks that its parent lives (where PR_SET_PDEATHSIG is missing).
PARENT_POLL_SECONDS = 1.0
#: prctl(2) option: the signal a process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


class WorkerError(CodeNibError):
    """A worker process failed on a chunk: the exception's type, message and traceback, as text
    (so that it always pickles back to the caller)."""


def _run_guarded(fn: Callable, chunk):
    """`fn(chunk)` in a worker; any exception comes back as one that pickles."""
    try:
        return fn(chunk)
    except Exception as exc:  # noqa: BLE001 - whatever a worker raises must reach the caller
        if _pickles(exc):
            raise       # a typed error keeps its class (a BadInputError still exits 2)
        detail = "".join(traceback.format_exception(exc)).rstrip()
        raise WorkerError(f"a worker process failed: {type(exc).__name__}: {exc}\n"
                          f"worker traceback:\n{detail}") from None


def _pickles(exc: BaseException) -> bool:
    """Whether `exc` survives the trip back to the caller: an exception pickles as its class
    called with its `args`, which a CodeNib error keeping the base constructor accepts (its
    `path` and `fix` travel in its `__dict__`); one with a constructor of its own may not."""
    return isinstance(exc, CodeNibError) and type(exc).__init__ is CodeNibError.__init__


def _die_with_parent(parent: int) -> None:
    """Pool initializer: end this worker when the process that started it ends."""
    if _set_parent_death_signal():
        # The parent may have died between the fork and the prctl: no signal would come.
        if os.getppid() != parent:
            os._exit(1)
        return
    threading.Thread(target=_watch_parent, args=(parent,), name="codenib-parent-watch", daemon=True).start()


def _set_parent_death_signal() -> bool:
    """Ask the kernel for SIGKILL when the parent dies (Linux); False where it cannot.

    The kernel ties this to the parent *thread* that forked the worker: the pool is started
    by the thread that uses it, which outlives its `Workers` block."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    """Exit the worker once its parent is gone (it is then re-parented, getppid changes)."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


def balanced_chunks(items: list, n: int, size: Callable, keep_order: bool = False) -> list[list]:
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


class Workers:
    """A pool of worker processes, started on first use (none when `size` is 1)."""

    def __init__(self, jobs: int | None):
        self.size = jobs if jobs is not None else len(os.sched_getaffinity(0))
        self._pool = None

    def __enter__(self) -> "Workers":
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
        from codenib.core.progress import Progress

        pool = self._started()
        futures = [pool.submit(_run_guarded, fn, chunk) for chunk in chunks]
        results = []
        with Progress(desc, len(futures), unit + "s", enabled=progress) as bar:
            for fut in futures:
                results.append(fut.result())
                bar.update(1)
        return results

    def map_runs(self, fn: Callable, chunks: list, desc: str, unit: str, progress: bool) -> list:
        """`fn` over each chunk in the workers, results in chunk order, each worker taking a
        contiguous run of chunks in order: the chunks are cut into one run per worker, and
        a worker whose run is done takes the second half of the longest run left.

        For work whose neighbouring chunks share inputs (history: the next commits change
        the same files), what a worker process keeps from one chunk serves the next. One
        chunk per worker is in flight, so each new chunk goes to the worker that just
        finished (which worker runs what never changes the results)."""
        from concurrent.futures import FIRST_COMPLETED, wait

        from codenib.core.progress import Progress

        n = len(chunks)
        if not n:
            return []
        pool = self._started()
        k = min(self.size, n)
        runs = [list(range(i * n // k, (i + 1) * n // k)) for i in range(k)]
        results: list = [None] * n
        in_flight: dict = {}

        def submit(r: int) -> None:
            if not runs[r]:
                longest = max(range(len(runs)), key=lambda j: len(runs[j]))
                if not runs[longest]:
                    return
                half = len(runs[longest]) // 2
                runs[r], runs[longest] = runs[longest][half:], runs[longest][:half]
            j = runs[r].pop(0)
            in_flight[pool.submit(_run_guarded, fn, chunks[j])] = (r, j)

        for r in range(k):
            submit(r)
        with Progress(desc, n, unit + "s", enabled=progress) as bar:
            while in_flight:
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for fut in done:
                    r, j = in_flight.pop(fut)
                    results[j] = fut.result()
                    bar.update(1)
                    submit(r)
        return results

    def _started(self):
        """The process pool, started now if it is not yet."""
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # fork where there is one: spawn and forkserver import the caller's main module
            # again, which breaks every script that calls `build_index` without a main guard.
            # The workers only parse and tokenize (no Arrow, no torch threads in them).
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
            self._pool = ProcessPoolExecutor(max_workers=self.size, mp_context=ctx,
                                             initializer=_die_with_parent, initargs=(os.getpid(),))
        return self._pool
