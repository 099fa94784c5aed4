"""What the two results sinks share: `ParquetSink` (a local folder) and `ObjectStoreSink`
(object storage) keep the same manifest of committed shards, stamp the same metadata on every
row group, and commit and finalize in the same order; each says how bytes reach its store.

A commit records each part's rows and sha256; a resumed job checks every committed part
against them (`drop_damaged`) and runs a shard whose part is missing or changed again."""

from __future__ import annotations

import json
import sys
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from codenib.core.errors import BadInputError
from codenib.core.results import (METADATA_KEY, PLANS, PLANS_RECORD, RESULTS_FORMAT, PartStat, damaged_parts,
                                  damaged_plans, part_name, plans_record)
from codenib.core.types import PLANS_SCHEMA, RESULTS_SCHEMA


class ShardSink(ABC):
    """The manifest and commit protocol of a results location (see `codenib.batch.sink`)."""

    def __init__(self, fingerprint: str, metadata: dict[str, Any], total_shards: int, *, force: bool = False,
                 log: Callable[[str], None] | None = None):
        self.fingerprint = fingerprint
        self.metadata = metadata
        self.total_shards = total_shards
        self.force = force
        self.log = log or (lambda message: print(message, file=sys.stderr, flush=True))
        self._manifest: dict[str, Any] = {}
        self._created = False

    @property
    def failed_shards(self) -> list[int]:
        return sorted(int(k) for k, v in self._manifest.get("shards", {}).items() if v.get("failed"))

    def commit(self, shard_id: int, results: pa.Table, plans: pa.Table, failed: bool = False) -> None:
        """Write a shard's result and plan rows into place, then record the shard in the
        manifest (the commit).

        `failed` marks a shard whose queries could not run at all (an actor or index
        failure after retries): its error rows are kept, and a re-run retries it.
        """
        name = part_name(shard_id)
        meta = self._row_metadata()
        results = results.cast(RESULTS_SCHEMA).replace_schema_metadata(meta)
        plans = plans.cast(PLANS_SCHEMA).replace_schema_metadata(meta)
        sha, plans_sha = self._put_part(name, results, plans)
        self._manifest["shards"][f"{shard_id:05d}"] = {"file": name, "rows": results.num_rows, "sha256": sha,
                                                       "queries": plans.num_rows, "plans_sha256": plans_sha,
                                                       "failed": failed}
        self._write_manifest()

    def drop_damaged(self) -> None:
        """Uncommit every shard whose part or plan part is missing or not what its commit
        recorded (rows, sha256), naming each file: the job runs it again. The folder stops
        being complete first (`_SUCCESS` and `plans.parquet` go), so an interruption from here
        on leaves a resumable folder, never one that claims to be whole."""
        damage = damaged_parts(self._manifest, self._stat, failed=False)
        if not damage:
            plans = damaged_plans(self._manifest, self._stat, self.complete)
            if plans is not None:
                # Every shard is whole: only plans.parquet is written again, from the plan parts.
                self.log(f"{self.location}: {plans}; {PLANS} is written again")
                self._forget_completion()
                self._manifest.pop(PLANS_RECORD, None)
                self._write_manifest()
            return
        for d in damage:
            self.log(f"{self.location}: {d}; shard {d.shard} runs again")
        self._forget_completion()
        bad = {d.shard for d in damage}
        shards = self._manifest["shards"]
        for key in [k for k in shards if str(k).isdigit() and int(k) in bad]:
            del shards[key]
        self._write_manifest()
        for shard in sorted(bad):
            self._remove_part(part_name(shard))   # the shard's own name, never one the manifest gave

    def finalize(self) -> Path | str:
        """Write `plans.parquet` from the committed shards, then `_SUCCESS` (last)."""
        done = sorted(self._manifest.get("shards", {}))
        if len(done) != self.total_shards:
            raise BadInputError(f"only {len(done)} of {self.total_shards} shards are committed",
                                path=str(self.location), fix="re-run the job to finish it")
        self._put_plans([part_name(int(s)) for s in done], self._row_metadata())
        # What plans.parquet holds, recorded before _SUCCESS: a reader checks it like a part.
        self._manifest[PLANS_RECORD] = plans_record(self._stat(PLANS))
        self._write_manifest()
        if self.failed_shards:
            return self.location  # no _SUCCESS until a re-run has retried the failed shards
        self._put_success((json.dumps({"run_id": self.metadata.get("run_id"), "shards": len(done)}) + "\n").encode())
        return self.location

    # -- for the sinks -------------------------------------------------------------------------

    @property
    @abstractmethod
    def complete(self) -> bool:
        """Whether `_SUCCESS` is there."""
        ...

    @property
    @abstractmethod
    def location(self) -> Path | str:
        """The folder or URI written to (in messages, and what `finalize` returns)."""
        ...

    @abstractmethod
    def _put_part(self, name: str, results: pa.Table, plans: pa.Table) -> tuple[str, str]:
        """Make `name` and `_plans/name` appear whole (staged first), before the commit;
        returns the sha256 of the bytes written for each."""
        ...

    @abstractmethod
    def _stat(self, rel: str) -> PartStat:
        """The sha256 and rows of the committed file `rel` (None when it is missing)."""
        ...

    @abstractmethod
    def _forget_completion(self) -> None:
        """Remove `_SUCCESS`, then `plans.parquet` (a shard is to be written again)."""
        ...

    @abstractmethod
    def _remove_part(self, name: str) -> None:
        """Remove `name` and `_plans/name` if present (a shard no longer committed)."""
        ...

    @abstractmethod
    def _put_plans(self, parts: list[str], meta: dict[str, bytes]) -> None:
        """Write `plans.parquet` from the plan parts `parts`, in that order."""
        ...

    @abstractmethod
    def _put_success(self, body: bytes) -> None:
        ...

    @abstractmethod
    def _write_manifest(self) -> None:
        ...

    def _new_manifest(self) -> dict[str, Any]:
        return {"format": RESULTS_FORMAT, "fingerprint": self.fingerprint, "total_shards": self.total_shards,
                "shards": {}, **self.metadata}

    def _resumable(self) -> set[int]:
        """Shards committed by an earlier run. A shard recorded as failed (infrastructure, not a
        query's own error) runs again."""
        return {int(k) for k, v in self._manifest.get("shards", {}).items() if not v.get("failed")}

    def _row_metadata(self) -> dict[str, bytes]:
        return {METADATA_KEY: json.dumps(self.metadata, sort_keys=True).encode()}


def parse_holder(data: bytes) -> dict[str, Any] | None:
    """The pid and host a lock's holder wrote into it (None when unreadable)."""
    try:
        holder = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError):
        return None
    return holder if isinstance(holder, dict) and "pid" in holder else None
