"""`--history`'s commit reader, run in worker processes: each commit of a chunk as a commit row
and, per changed file, change rows (the file, and the definitions its hunks touch in the blob
of that commit, parsed once by the index's own readers in their spans-only mode; for a
reader that `derives`, a blob's outline is derived from a neighbouring version's when one
is cached, `Reader.derive`).

`codenib.compiler.history` cuts the commits into chunks, maps `read_chunk` over them and
writes the tables; the decisions (merges, deletions, ids, `is_fix`) are documented there.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

import numpy as np

from codenib.core.gcpause import collector_paused
from codenib.compiler.lang import LANGUAGES, Reader, reader_named, reader_of
from codenib.compiler.walk import is_utf8
from codenib.engines.languages import language_of
from codenib.core.types import ID_SEP

#: Commit messages that say a defect was repaired.
FIX_PATTERN = re.compile(
    r"\b(?:fix(?:e[sd]|ing)?|bug(?:fix)?s?|errors?|crash(?:es|ed)?|regressions?)\b"
    r"|\b(?:issue|close[sd]?|fixe[sd]|resolve[sd]?)\s*#\d+", re.IGNORECASE)
#: Parsed blobs a worker keeps (a blob is needed again when the file next changes).
BLOB_CACHE = 4096
#: Neighbouring versions remembered per blob of a reader that derives (the commits before and after it).
MAX_DIFFS = 4
#: Memory a worker's outlines may hold (`Reader.outline_weight` times the file's bytes; a
#: tree-sitter tree is about 26 bytes a byte of source): past it the least recently used lose
#: their outline (their spans stay cached), so a neighbour of theirs is parsed in full.
OUTLINE_BYTES = 256 * 2**20


#: This process's parsed blobs and the read they belong to: kept from one chunk of a read to
#: the next (a worker takes consecutive chunks, whose commits change the same files). At most
#: `BLOB_CACHE` entries (a name list, a line array and an outline or None each); a worker
#: process drops them when the next read starts or the pool closes, the reading process at
#: the end of the read.
_CACHE: dict = {"read": None, "blobs": None}


@dataclass(slots=True)
class _Blobs:
    """A worker's parsed blobs, by (blob id, `_read_as` of its path): (names, line owners, the outline a
    neighbour may be derived from, or None); and per blob of a reader that derives, the
    neighbouring versions it differs from by known hunks (`_note_diff`), most recent use last
    in both."""

    parsed: OrderedDict = field(default_factory=OrderedDict)
    diffs: OrderedDict = field(default_factory=OrderedDict)
    latest: dict = field(default_factory=dict)      # path -> its last outlined blob
    held: OrderedDict = field(default_factory=OrderedDict)   # key of a counted outline -> its bytes
    held_bytes: int = 0

    def keep(self, key: tuple[str, str], entry: tuple, held: int) -> None:
        """Cache a parsed blob whose outline holds `held` bytes; evict past the bounds."""
        self.parsed[key] = entry
        if held:
            self.held[key] = held
            self.held_bytes += held
        while len(self.parsed) > BLOB_CACHE:
            self._drop_outline(next(iter(self.parsed)))
            self.parsed.popitem(last=False)
        while self.held_bytes > OUTLINE_BYTES and self.held:
            self._drop_outline(next(iter(self.held)))

    def used(self, key: tuple[str, str]) -> None:
        """`key`'s entry was read: the last to lose its outline."""
        self.parsed.move_to_end(key)
        if key in self.held:
            self.held.move_to_end(key)

    def _drop_outline(self, key: tuple[str, str]) -> None:
        held = self.held.pop(key, 0)
        if held:
            self.held_bytes -= held
            names, owner, _ = self.parsed[key]
            self.parsed[key] = (names, owner, None)


def read_chunk(args: tuple[str, list[str], str, frozenset]) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """Commit rows, change rows and missing objects (object id, path, commit) of the commits
    `ids` of the repository at `gitdir` (`read` names the read, whose parsed blobs this process
    keeps between chunks; `boundary`: a shallow clone's boundary commits, whose parents are
    not in the repository)."""
    # Without the cycle collector, as the index's own parsing: a parse makes millions of
    # short-lived objects, which refcounting frees, and the collector's passes over them took
    # a third of a Python history read's CPU (sphinx, 2,391 commits: 18.5 s -> 12.3 s).
    with collector_paused():
        return _read_commits(args)


def clear_blob_cache() -> None:
    """Drop this process's parsed blobs (the reading process, at the end of a read)."""
    _blob_cache(None)


def _read_commits(args: tuple[str, list[str], str, frozenset]
                  ) -> tuple[list[tuple], list[tuple], list[tuple]]:
    import pygit2

    gitdir, ids, read, boundary = args
    repo = pygit2.Repository(gitdir)
    cache = _blob_cache(read)
    commits, changes, missing = [], [], []
    for cid in ids:
        commit = repo[pygit2.Oid(hex=cid)]
        message = commit.message
        rows: list[tuple] = []
        n_files = 0
        if cid in boundary:
            # libgit2 reads a shallow boundary as a root: its diff would be every file it holds.
            parents = _raw_parents(commit)
        else:
            parents = [str(p) for p in commit.parent_ids]
        if len(parents) <= 1 and cid not in boundary:
            try:
                # Trees read here, so that a missing one raises KeyError (repo.diff: TypeError).
                tree = commit.tree
                diff = (commit.parents[0].tree.diff_to_tree(tree, context_lines=0) if parents
                        else tree.diff_to_tree(swap=True, context_lines=0))
                deltas = list(diff.deltas)
            except (KeyError, pygit2.GitError) as exc:   # a tree left out: no changes known
                missing.append((_missing_id(exc), "", cid))
                deltas = []
            n_files = len(deltas)
            for i, delta in enumerate(deltas):
                try:
                    rows += _file_changes(repo, diff, i, delta, cache)
                except KeyError:        # pygit2.NotFoundError too: a blob left out
                    path = _row_path(delta)
                    if path is not None:
                        rows.append((path, path, None))
                    missing += [(oid, path or "", cid) for oid in _absent_blobs(repo, delta)]
        commits.append((cid, int(commit.author.time), message, parents,
                        bool(FIX_PATTERN.search(message)), n_files))
        changes += [(cid, *r) for r in rows]
    return commits, changes, missing


def _raw_parents(commit) -> list[str]:
    """The parent ids a commit object names (a shallow boundary's are not in the repository)."""
    header = commit.read_raw().split(b"\n\n", 1)[0]
    return [line[7:].decode("ascii") for line in header.split(b"\n") if line.startswith(b"parent ")]


def _missing_id(exc: KeyError) -> str:
    """The object id a lookup error names (pygit2 puts it in the message)."""
    found = re.search(r"[0-9a-f]{40}", str(exc))
    return found.group(0) if found else str(exc)


def _absent_blobs(repo, delta) -> list[str]:
    """The ids of a changed file's two sides that the object store lacks."""
    ids = []
    for side in (delta.old_file, delta.new_file):
        oid = side.id
        if not oid.raw == b"\0" * 20 and oid not in repo:
            ids.append(str(oid))
    return ids


def _row_path(delta) -> str | None:
    """The name a changed file is recorded under; None for a path that cannot be a node."""
    import pygit2

    deleted = delta.status == pygit2.enums.DeltaStatus.DELETED
    path = delta.old_file.path if deleted else delta.new_file.path
    if ID_SEP in path:
        # As the walker, which skips it: `a::b.py::f` would split into file `a`.
        return None
    if not is_utf8(path):
        # As the walker: an undecodable name is no node (ids are UTF-8 in Parquet); the file is
        # recorded under its name decoded with replacement, not parsed.
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return path


def _file_changes(repo, diff, i: int, delta, cache: _Blobs) -> list[tuple]:
    """(file, node_id, lines) rows of one changed file (raises KeyError for a missing blob)."""
    import pygit2

    path = _row_path(delta)
    if path is None:
        return []
    if path != delta.new_file.path and path != delta.old_file.path:
        return [(path, path, None)]     # a name that is not UTF-8: recorded, not parsed
    language = _language(path)
    if language is None or _is_submodule(delta):
        return [(path, path, None)]
    patch = diff[i]
    if patch is None or patch.delta.is_binary:
        return [(path, path, None)]
    counts: Counter = Counter()
    hunks = _hunks(patch)
    if reader_named(language).derives and delta.status == pygit2.enums.DeltaStatus.MODIFIED:
        _note_diff(cache, str(delta.new_file.id), str(delta.old_file.id), hunks)
    total = 0
    new_index = old_index = None
    for old_start, old_lines, new_start, new_lines in hunks:
        total += old_lines + new_lines
        if new_lines > 0:
            if new_index is None:
                new_index = _spans(repo, delta.new_file.id, path, language, cache)
            _count(new_index, new_start, new_lines, counts)
        elif old_lines > 0:
            if old_index is None:
                old_index = _spans(repo, delta.old_file.id, delta.old_file.path, language, cache)
            _count(old_index, old_start, old_lines, counts)
    rows = [(path, path, total)]
    rows += [(path, f"{path}::{suffix}", n) for suffix, n in sorted(counts.items())]
    return rows


def _count(index: tuple[list[str], np.ndarray], start: int, n: int, counts: Counter) -> None:
    """Add each line start..start+n-1 to its innermost definition's count."""
    names, owner = index
    seg = owner[start:start + n]
    seg = seg[seg >= 0]
    if seg.size:
        for j, c in zip(*np.unique(seg, return_counts=True)):
            counts[names[j]] += int(c)


def _hunks(patch) -> list[tuple[int, int, int, int]]:
    """A patch's hunks as (old start, old lines, new start, new lines)."""
    return [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]


def _note_diff(cache: _Blobs, new: str, old: str, hunks: list[tuple]) -> None:
    """Remember that blobs `old` and `new` of a file differ by `hunks`: either one's
    outline is then derived from the other's when that one is parsed first."""
    diffs = cache.diffs
    for blob, base, oriented in ((new, old, hunks), (old, new, [(c, d, a, b) for a, b, c, d in hunks])):
        known = diffs.setdefault(blob, [])
        if len(known) < MAX_DIFFS:
            known.append((base, oriented))
        diffs.move_to_end(blob)
    while len(diffs) > BLOB_CACHE:
        diffs.popitem(last=False)


def _spans(repo, oid, path: str, language: str, cache: _Blobs) -> tuple[list[str], np.ndarray]:
    """The definitions of a blob (qualname suffixes of their ids) and, per line (1-based), the
    innermost one's position (-1: none). Cached by (blob id, `_read_as(path, language)`)."""
    key = (str(oid), _read_as(path, language))
    hit = cache.parsed.get(key)
    if hit is not None:
        cache.used(key)
        return hit[:2]
    raw = repo[oid].data
    reader = reader_of(path, raw)
    if reader.derives:
        spans, outline = _outlined_spans(repo, reader, path, raw, key, cache)
    else:
        spans, outline = reader.spans(path, raw), None
    held = int(reader.outline_weight * len(raw)) if outline is not None else 0
    n_lines = raw.count(b"\n") + 2
    owner = np.full(n_lines + 1, -1, dtype=np.int32)
    names: list[str] = []
    prefix = len(path) + 2
    # Outer definitions first, so that inner ones overwrite their lines.
    for node_id, start, end in sorted(spans, key=lambda s: (s[1], -s[2])):
        owner[start:end + 1] = len(names)
        names.append(node_id[prefix:])
    cache.keep(key, (names, owner, outline), held)
    return names, owner


def _outlined_spans(repo, reader: Reader, path: str, raw: bytes, key: tuple[str, str], cache: _Blobs
                    ) -> tuple[list, object | None]:
    """A blob's definition spans, and its outline when a neighbour's may be derived from it:
    derived from another version's outline when one is cached and the diff allows
    (`reader.derive`), else read in full (`reader.outline`). The other version is one a
    commit read changed into this one or this one into (its hunks known), else the path's
    last outlined version (diffed here: a merge's result is no commit's diff side)."""
    import pygit2

    blob, read_as = key
    got = None
    for base, hunks in cache.diffs.get(blob, ()):
        hit = cache.parsed.get((base, read_as))
        if hit is not None and hit[2] is not None:
            cache.used((base, read_as))
            got = reader.derive(hit[2], path, raw, hunks)
            if got is not None:
                break
    last = cache.latest.get(path)
    if got is None and last is not None and last != blob:
        hit = cache.parsed.get((last, read_as))
        if hit is not None and hit[2] is not None:
            patch = pygit2.Patch.create_from(repo[pygit2.Oid(hex=last)].data, raw, context_lines=0)
            got = reader.derive(hit[2], path, raw, _hunks(patch))
    if got is None:
        got = reader.outline(path, raw)
    if got[1] is not None:
        cache.latest[path] = blob
    return got


def _read_as(path: str, language: str) -> str:
    """How a blob at `path` is read: its language and its name's last `.` part, case kept (a
    hidden `.tsx` file's included). The same bytes may read otherwise under another suffix of
    one language (`.ts` and `.tsx` take two grammars)."""
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    return f"{language}{name[dot:] if dot >= 0 else ''}"


def _language(path: str) -> str | None:
    """The language of a reader that takes the file by its name, or None (the file is
    recorded, not parsed)."""
    language = language_of(path)
    return language if language in LANGUAGES else None


def _is_submodule(delta) -> bool:
    return delta.new_file.mode == 0o160000 or delta.old_file.mode == 0o160000




def _blob_cache(read: str | None) -> _Blobs:
    """The parsed-blob cache of the read `read` (emptied when another read starts; None
    empties it)."""
    if _CACHE["read"] != read or read is None:
        _CACHE["read"], _CACHE["blobs"] = read, _Blobs()
    return _CACHE["blobs"]
