"""Unified diffs read as what they change on the old side: per file, the lines a fix touches in
the version it was written against (the judgments of `codenib qrels` come from these).

Parsing is `unidiff`'s; this module only says which old lines count:

- a removed line counts itself;
- an added line counts the old line it follows (0 at the top of the file), so an insertion
  between two definitions belongs to the one above it, as in Multi-SWE-bench's gold;
- context and removed lines are the old text the patch expects (`expects`), which lets a
  caller check that the patch applies to a given version of the file.

Core level: `unidiff` is pure Python and imported lazily.
"""

from __future__ import annotations

from dataclasses import dataclass

from codenib.core.errors import BadInputError

#: Prefixes git and most tools put before the paths of a diff's two sides.
SIDE_PREFIXES = ("a/", "b/")


@dataclass(frozen=True, slots=True)
class FileChange:
    """What a patch does to one file, on the old side.

    `path` is the file's path in the old version (None for a file the patch adds);
    `touched` the old lines it changes, sorted (see the module docstring); `expects` the old
    text of each line it shows (context and removed), by line number.
    """

    path: str | None
    new_path: str | None
    touched: tuple[int, ...]
    expects: tuple[tuple[int, str], ...]

    @property
    def added(self) -> bool:
        return self.path is None

    @property
    def removed(self) -> bool:
        return self.new_path is None


def read_patch(text: str) -> list[FileChange]:
    """The files a unified diff changes, in the order it lists them.

    Raises:
        BadInputError: the text is not a unified diff (the message quotes the parser).
    """
    import unidiff

    try:
        patch = unidiff.PatchSet(text)
    except (unidiff.UnidiffParseError, ValueError) as exc:
        raise BadInputError(f"the patch is not a unified diff: {exc}",
                            fix="give the `patch` column a unified diff (`git diff` output) against the "
                                "snapshot's revision") from exc
    if not len(patch) and text.strip():
        raise BadInputError("the patch holds no file diff (no '--- a/...' and '+++ b/...' headers)",
                            fix="give the `patch` column a unified diff (`git diff` output)")
    return [_file_change(f) for f in patch]


def _file_change(f) -> FileChange:
    old = None if f.is_added_file else _side_path(f.source_file)
    new = None if f.is_removed_file else _side_path(f.target_file)
    touched: set[int] = set()
    expects: dict[int, str] = {}
    for hunk in f:
        # The old line an insertion follows: "-L,0" inserts after line L, else the hunk's
        # old lines start at L and whatever comes first follows line L - 1.
        anchor = hunk.source_start if hunk.source_length == 0 else hunk.source_start - 1
        for line in hunk:
            if line.is_added:
                touched.add(anchor)
                continue
            if not (line.is_context or line.is_removed):    # "\ No newline at end of file"
                continue
            anchor = line.source_line_no
            expects[anchor] = line.value.rstrip("\r\n")
            if line.is_removed:
                touched.add(anchor)
    return FileChange(old, new, tuple(sorted(touched)), tuple(sorted(expects.items())))


def _side_path(path: str) -> str:
    for prefix in SIDE_PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix):]
    return path
