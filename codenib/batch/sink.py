"""`ParquetSink`: writes a sharded, resumable results folder (layout: `codenib.results`).

A shard is written to `_staging/` and renamed into place; it counts as committed only once
`_manifest.json` (replaced atomically) lists it, so a re-run skips it and never duplicates or
loses rows. When every shard is committed, `plans.parquet` and finally `_SUCCESS` are written.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from codenib.artifact import pid_alive
from codenib.errors import BadInputError
from codenib.results import LOCK, MANIFEST, METADATA_KEY, PLANS, RESULTS_FORMAT, ResultsFolder, part_name
from codenib.types import PLANS_SCHEMA, RESULTS_SCHEMA


class ParquetSink:
    """Writes one results folder; `open` validates it and returns the shards already done."""

    def __init__(self, out: str | Path, fingerprint: str, metadata: dict[str, Any], total_shards: int):
        self.out = Path(out)
        self.folder = ResultsFolder(self.out)
        self.fingerprint = fingerprint
        self.metadata = metadata
        self.total_shards = total_shards
        self._manifest: dict[str, Any] = {}

    # -- lifecycle ------------------------------------------------------------------------------

    def open(self) -> set[int]:
        """Create or resume the folder; refuse one that holds something else.

        Raises:
            BadInputError: the folder holds another job's results or unrelated files.
        """
        out = self.out
        if out.exists() and not out.is_dir():
            raise BadInputError("the output path is a file", path=str(out), fix="pass a folder to --out")
        manifest_path = self.folder.manifest_path
        if manifest_path.is_file():
            try:
                manifest = self.folder.manifest()
            except ValueError as exc:
                raise BadInputError(f"unreadable {MANIFEST}: {exc}", path=str(manifest_path),
                                    fix="remove the folder or pass another --out") from exc
            if manifest.get("format") != RESULTS_FORMAT or manifest.get("fingerprint") != self.fingerprint:
                raise BadInputError(
                    "the output folder holds another job's results (different queries, indexes or "
                    "options)", path=str(out),
                    fix="pass a new --out, or re-run with exactly the options of that job to resume it")
            self._manifest = manifest
        elif out.is_dir() and any(out.iterdir()):
            raise BadInputError("the output folder is not empty and is not a CodeNib results folder",
                                path=str(out), fix="pass a new or empty --out folder")
        else:
            out.mkdir(parents=True, exist_ok=True)
            self._manifest = {"format": RESULTS_FORMAT, "fingerprint": self.fingerprint,
                              "total_shards": self.total_shards, "shards": {}, **self.metadata}
            self._write_manifest()
        self._lock()
        self.folder.plan_parts.mkdir(exist_ok=True)
        staging = self.folder.staging
        if staging.exists():
            shutil.rmtree(staging)  # leftovers of an interrupted shard: it was never committed
        staging.mkdir()
        # A shard recorded as failed (infrastructure, not a query's own error) runs again.
        return {int(k) for k, v in self._manifest.get("shards", {}).items() if not v.get("failed")}

    @property
    def complete(self) -> bool:
        return self.folder.complete

    @property
    def failed_shards(self) -> list[int]:
        return sorted(int(k) for k, v in self._manifest.get("shards", {}).items() if v.get("failed"))

    def commit(self, shard_id: int, results: pa.Table, plans: pa.Table, failed: bool = False) -> None:
        """Write a shard's result and plan rows, then record it as committed.

        `failed` marks a shard whose queries could not run at all (an actor or index
        failure after retries): its error rows are kept, and a re-run retries it.
        """
        name = part_name(shard_id)
        staging = self.folder.staging
        meta = {METADATA_KEY: json.dumps(self.metadata, sort_keys=True).encode()}
        results = results.cast(RESULTS_SCHEMA).replace_schema_metadata(meta)
        plans = plans.cast(PLANS_SCHEMA).replace_schema_metadata(meta)
        pq.write_table(results, staging / name)
        pq.write_table(plans, staging / f"plans-{name}")
        os.replace(staging / f"plans-{name}", self.folder.plan_parts / name)
        os.replace(staging / name, self.out / name)
        self._manifest["shards"][f"{shard_id:05d}"] = {"file": name, "rows": results.num_rows,
                                                       "queries": plans.num_rows, "failed": failed}
        self._write_manifest()

    def finalize(self) -> Path:
        """Write `plans.parquet` from the committed shards, then `_SUCCESS` (last)."""
        done = sorted(self._manifest.get("shards", {}))
        if len(done) != self.total_shards:
            raise BadInputError(f"only {len(done)} of {self.total_shards} shards are committed",
                                path=str(self.out), fix="re-run the job to finish it")
        tables = [pq.read_table(self.folder.plan_parts / part_name(int(s))) for s in done]
        plans = pa.concat_tables(tables) if tables else PLANS_SCHEMA.empty_table()
        meta = {METADATA_KEY: json.dumps(self.metadata, sort_keys=True).encode()}
        tmp = self.folder.staging / PLANS
        pq.write_table(plans.replace_schema_metadata(meta), tmp)
        os.replace(tmp, self.folder.plans_path)
        shutil.rmtree(self.folder.staging, ignore_errors=True)
        if self.failed_shards:
            return self.out  # no _SUCCESS until a re-run has retried the failed shards
        self.folder.success_path.write_text(json.dumps({"run_id": self.metadata.get("run_id"),
                                                    "shards": len(done)}) + "\n")
        return self.out

    def close(self) -> None:
        """Release the folder (the lock file); safe to call more than once."""
        lock = self.folder.lock_path
        try:
            if json.loads(lock.read_text()).get("pid") == os.getpid():
                lock.unlink()
        except (OSError, ValueError):
            pass

    def _lock(self) -> None:
        """One writer per folder: a second job would delete the first one's staging files
        and overwrite its manifest. A lock left by a dead process on this host is taken over."""
        lock = self.folder.lock_path
        me = {"pid": os.getpid(), "host": socket.gethostname()}
        try:
            held = json.loads(lock.read_text())
        except (OSError, ValueError):
            held = None
        if held and held.get("pid") != me["pid"]:
            if held.get("host") != me["host"] or pid_alive(held.get("pid")):
                raise BadInputError(f"another job (pid {held.get('pid')} on {held.get('host')}) is writing to "
                                    "this results folder", path=str(self.out),
                                    fix=f"wait for it to finish, or remove {lock} if no job is running")
        tmp = self.out / (LOCK + ".tmp")
        tmp.write_text(json.dumps(me))
        os.replace(tmp, lock)

    def _write_manifest(self) -> None:
        tmp = self.out / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self._manifest, indent=2, sort_keys=True))
        os.replace(tmp, self.folder.manifest_path)
