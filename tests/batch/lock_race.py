"""A process of the results-folder lock race (tests/batch/test_sink.py): in each trial, every
racer opens a `ParquetSink` on the same new folder at once (a barrier), keeps what it got
until all have tried (a second barrier), then lets go."""

from __future__ import annotations

import os
from pathlib import Path


def race(root: str, trials: int, barrier, outcomes) -> None:
    """Run `trials` rounds; put (pid, [outcome per trial]) on `outcomes`.

    An outcome is ("won",), ("lost", message, exit_code) or ("crashed", repr of the error).
    """
    from codenib.batch.sink import ParquetSink
    from codenib.core.errors import BadInputError

    mine = []
    for trial in range(trials):
        sink = ParquetSink(Path(root) / f"t{trial:04d}", "fp", {"run_id": "race"}, total_shards=1,
                           log=lambda message: None)
        barrier.wait(timeout=120)
        try:
            sink.open()
            outcome: tuple = ("won",)
        except BadInputError as exc:
            outcome = ("lost", str(exc), exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - the race must report, never hang the barrier
            outcome = ("crashed", repr(exc))
        barrier.wait(timeout=120)
        if outcome[0] == "won":
            sink.close()
        mine.append(outcome)
    outcomes.put((os.getpid(), mine))


def hold(root: str, ready, seconds: float) -> None:
    """Open a sink on `root`, say so, and keep it for `seconds` (the test kills it before)."""
    import time

    from codenib.batch.sink import ParquetSink

    sink = ParquetSink(Path(root), "fp", {"run_id": "holder"}, total_shards=1, log=lambda message: None)
    sink.open()
    ready.set()
    time.sleep(seconds)
    sink.close()
