"""How `codenib index-set` leaves its snapshots and its store: the layout of each finished
snapshot (whole, or over the per-file store: `codenib.core.store_layout`) and the store's
packs (`codenib.core.store_packs`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from codenib.core.errors import BadInputError, CodeNibError

if TYPE_CHECKING:
    from codenib.core.store_backend import StoreBackend

#: `--layout`: each snapshot a whole index folder, or one over the shared per-file store
#: (`codenib.core.store_layout`: nodes and BM25 read back from the store, ~1/10 of the disk).
FULL_LAYOUT = "full"
LAYOUTS = (FULL_LAYOUT, "store")


def check_layout(layout: str, store: "StoreBackend") -> None:
    """A known layout, and a store the store layout can read back from."""
    from codenib.core.store_backend import LocalBackend

    if layout not in LAYOUTS:
        raise BadInputError(f"unknown --layout {layout!r}", fix=f"pass one of {', '.join(LAYOUTS)}")
    if layout != FULL_LAYOUT and not isinstance(store, LocalBackend):
        raise BadInputError(f"--layout {layout} reads each index back from a local per-file store, and "
                            f"--store is {store.shown()}", fix="pass a folder as --store, or --layout full")


def set_layout(folder: Path, rows: list[dict], store: "StoreBackend", layout: str) -> None:
    """Rewrite the index at `folder` in `layout` once the run no longer builds on it, and
    say so in its report row (a snapshot that cannot be rewritten stays whole, and loads)."""
    from codenib.core.artifact import is_store_layout, read_manifest

    row = next((r for r in rows if r["index"] == folder.name), None)
    if layout != FULL_LAYOUT:
        from codenib.compiler.compact import compact_index

        try:
            compact_index(folder, store, lambda message: None)
        except (CodeNibError, OSError):
            pass    # still a whole index in the full layout: the row says so
    if row is not None:
        try:
            row["layout"] = "store" if is_store_layout(read_manifest(folder, verify=False)) else FULL_LAYOUT
        except CodeNibError:
            row["layout"] = None


def pack(store: "StoreBackend", log: Callable[[str], None]) -> None:
    """Pack a local store's new entries (`codenib.core.store_packs`); one that cannot be packed
    stays as it is, loose entries and all, and is read the same."""
    from codenib.core.store_backend import LocalBackend
    from codenib.core.store_packs import pack_store

    if isinstance(store, LocalBackend):
        try:
            pack_store(store.root, log)
        except OSError as exc:
            log(f"warning: the store {store.root} was not packed ({exc}); its entries stay loose")
