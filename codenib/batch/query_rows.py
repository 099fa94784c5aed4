"""A query set's rows and shards, and resolving the index a row names: the bottom of the
query-set modules (`queries` reads a small set, `scan` streams a large one)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codenib.core.errors import CodeNibError
from codenib.model.planspec import QueryPlan
from codenib.core.storage import Location, StorageConfig


#: Row numbers listed in an error message before "and N more".
MAX_LISTED = 10


@dataclass(frozen=True, slots=True)
class QueryRow:
    """One query of a set, with its resolved index and optional per-row overrides."""

    qid: str
    query: str
    index: str            # the index as written (a path or a name under --index-root)
    index_path: str       # resolved folder ('' when it could not be resolved)
    budget: str | None = None
    mode: str | None = None
    error: str | None = None   # a per-row problem: the query becomes an error row
    plans: tuple[QueryPlan, ...] = ()   # planned once by the driver: one per mode it runs
    text_changes: tuple[tuple[str, int], ...] = ()   # what cleaning changed (codenib.core.querytext)

    def planned(self, mode: str) -> QueryPlan:
        """The driver's plan of this query for `mode`."""
        for p in self.plans:
            if p.mode == mode:
                return p
        raise CodeNibError(f"query {self.qid!r} carries no plan for mode {mode!r}: plan the rows first "
                           "(codenib.batch.driver.plan_rows)")


@dataclass(frozen=True, slots=True)
class Shard:
    """Queries of one index, processed and committed together."""

    shard_id: int
    index: str
    index_path: str
    rows: tuple[QueryRow, ...]
    index_sha: str = ""    # sha256 of the index's manifest when the job started


def resolve_index_name(name: str, root: str | Path | Location,
                       storage: StorageConfig | None = None) -> tuple[str, str | None]:
    """An index name of an `index` column resolved strictly under `root`.

    Returns (folder, None) for a name that is a relative path without `..` whose folder,
    symlinks resolved, lies under the resolved root and holds a manifest.json; ('', None)
    for such a name with no index there; ('', problem) for a name that could reach outside
    the root (absolute, `..`, a symlink leading out), the problem naming the fix. Under a URI
    root (object storage has no links) the folder is `ROOT/NAME`, the URI.
    """
    if not name:
        return "", None
    root = Location.of(root)
    fix = (f"write the index's folder relative to {root} (e.g. 'click'), without '..' or a leading '/', "
           "or pass --index DIR for one index")
    pure = Path(name)
    if "\x00" in name or pure.is_absolute() or ".." in pure.parts:
        return "", f"index {name!r} is not a name under --index-root {root} (fix: {fix})"
    if root.uri:
        if "\\" in name or "//" in name or pure.as_posix() in ("", "."):
            return "", f"index {name!r} is not a name under --index-root {root} (fix: {fix})"
        uri = f"{root.text.rstrip('/')}/{pure.as_posix()}"
        return (uri, None) if (storage or StorageConfig()).open(uri).is_file("manifest.json") else ("", None)
    try:
        base = Path(root.text).resolve(strict=True)
        folder = (base / pure).resolve(strict=False)
    except (OSError, RuntimeError):   # a missing root, a symlink loop
        return "", None
    if not folder.is_relative_to(base):
        return "", f"index {name!r} leads outside --index-root {root} through a symbolic link (fix: {fix})"
    return (str(folder), None) if (folder / "manifest.json").is_file() else ("", None)


def qid_text(v) -> str | None:
    """A qid cell as text, None when empty."""
    if v is None:
        return None
    s = str(v).strip()
    return s or None


def resolve_index(name: str | Location, root: str | Path | Location | None,
                  storage: StorageConfig | None = None) -> str:
    """The index folder a name refers to ('' when there is none with a manifest): a path as
    given, or (with `root`) a name strictly under the root."""
    if root is not None:
        return resolve_index_name(str(name), root, storage)[0]
    if not str(name):
        return ""
    location = Location.of(name)
    if location.uri:
        store = (storage or StorageConfig()).open(location.text)
        store.check_bucket()
        return store.uri if store.is_file("manifest.json") else ""
    folder = Path(location.text)
    return str(folder.resolve()) if (folder / "manifest.json").is_file() else ""


def listed(items: list) -> str:
    """The first `MAX_LISTED` items, and how many more, for an error message."""
    shown = ", ".join(str(i) for i in items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")
