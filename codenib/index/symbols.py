"""`SymbolIndex`: exact look-up of a symbol by name, qualified name, module path or file path."""

from __future__ import annotations

from dataclasses import dataclass

from codenib.engines.languages import language_of
from codenib.engines.modules import module_name_for, package_dirs_of
from codenib.core.types import plain_qualname


#: Match levels, most specific first: a look-up returns every row of the best level that hits.
LEVELS = ("path", "module_qualname", "qualname", "qualname_suffix", "qualname_nocase", "name", "name_nocase")


@dataclass(frozen=True, slots=True)
class SymbolMatch:
    """A node that a symbol names, and how specifically it matched."""

    row: int
    level: str


class SymbolIndex:
    """Maps the ways people write a symbol to node rows.

    `click.core.Context.invoke`, `Context.invoke`, `invoke`, `src/click/core.py` and
    `click.core` all resolve; `#2`/`#3` duplicates of a qualified name are returned with it.
    """

    def __init__(self, node_ids: list[str], kinds: list[str], files: list[str], qualnames: list[str],
                 names: list[str], root_package: str | None = None):
        package_dirs = package_dirs_of(set(files))
        # Dotted module names are Python's; other languages' files are found by path.
        module_of = {f: module_name_for(f, package_dirs, root_package) if f.endswith(".py") else ""
                     for f in set(files)}
        self.by_path: dict[str, list[int]] = {}
        self.by_module_qual: dict[str, list[int]] = {}
        self.by_qual: dict[str, list[int]] = {}
        self.by_name: dict[str, list[int]] = {}
        self.by_name_lower: dict[str, list[int]] = {}
        self.by_qual_lower: dict[str, list[int]] = {}
        self.qual_suffixes: dict[str, list[int]] = {}
        #: The most dotted parts of any qualified name: a longer suffix names nothing.
        self.qual_depth = 0
        for row, (nid, kind, f, q, name) in enumerate(zip(node_ids, kinds, files, qualnames, names)):
            module = module_of[f]
            if kind == "file":
                self.by_path.setdefault(f, []).append(row)
                if module:
                    self.by_module_qual.setdefault(module, []).append(row)
                continue
            plain = plain_qualname(q)
            self.by_qual.setdefault(plain, []).append(row)
            self.by_qual_lower.setdefault(plain.lower(), []).append(row)
            if module:
                self.by_module_qual.setdefault(f"{module}.{plain}", []).append(row)
            self.by_name.setdefault(name, []).append(row)
            self.by_name_lower.setdefault(name.lower(), []).append(row)
            parts = plain.split(".")
            self.qual_depth = max(self.qual_depth, len(parts))
            for i in range(1, len(parts) - 1):
                self.qual_suffixes.setdefault(".".join(parts[i:]), []).append(row)

    def files_matching(self, path: str) -> list[str]:
        """Indexed files a mentioned path can mean: the same file seen from any root.

        `/venv/site-packages/jinja2/utils.py`, `jinja2/utils.py` and `utils.py` all match
        `src/jinja2/utils.py` (a path of any indexed language likewise); the longest common
        tail of path components wins.
        """
        parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
        if not parts or language_of(parts[-1]) is None:
            return []
        best: list[str] = []
        best_len = 0
        for f in self.by_path:
            fp = f.split("/")
            n = 0
            while n < min(len(fp), len(parts)) and fp[-1 - n] == parts[-1 - n]:
                n += 1
            if n > best_len:
                best, best_len = [f], n
            elif n == best_len and n > 0:
                best.append(f)
        return sorted(best)

    @classmethod
    def from_nodes(cls, nodes, root_package: str | None = None) -> "SymbolIndex":
        """Build from a `NodeTable` (columns node_id, kind, file, qualname, name)."""
        return cls(nodes.node_id, nodes.kind, nodes.file, nodes.qualname, nodes.name, root_package)

    def definitions(self, symbol: str) -> tuple[str | None, int]:
        """(match level, number of rows) `symbol` resolves to, as `lookup` finds them;
        (None, 0) when it names nothing. What the planner weighs a candidate target by."""
        matches = self.lookup(symbol)
        return (matches[0].level, len(matches)) if matches else (None, 0)

    def lookup(self, symbol: str, limit: int | None = None) -> list[SymbolMatch]:
        """Rows named by `symbol`, all from the most specific level that matches, by row."""
        s = symbol.strip().strip("`'\"").removesuffix("()").strip()
        if not s:
            return []
        s = plain_qualname(s)
        if "." in s or "/" in s:
            tables = (
                ("path", self.by_path, s.lstrip("./")),
                ("module_qualname", self.by_module_qual, s),
                ("qualname", self.by_qual, s),
                ("qualname_suffix", self.qual_suffixes, s),
            )
        else:
            # A bare name means every definition of that name (methods included), before
            # a module of that name.
            tables = (
                ("name", self.by_name, s),
                ("module_qualname", self.by_module_qual, s),
                ("name_nocase", self.by_name_lower, s.lower()),
            )
        for level, table, key in tables:
            rows = table.get(key)
            if rows:
                out = [SymbolMatch(r, level) for r in sorted(set(rows))]
                return out[:limit] if limit is not None else out
        if "." in s:
            # `pkg.mod.Class.method` where the module part is spelled differently (src layout
            # names, aliases): fall back to the longest qualified-name suffix that matches.
            parts = s.split(".")
            # Only suffixes no longer than a qualified name can be one (a 30,000-part token
            # would otherwise join quadratically many characters).
            for i in range(max(1, len(parts) - self.qual_depth), len(parts)):
                rows = self.by_qual.get(".".join(parts[i:]))
                if rows:
                    out = [SymbolMatch(r, "qualname_suffix") for r in sorted(set(rows))]
                    return out[:limit] if limit is not None else out
            # Typed in another case ("progressbar.format_eta"): the qualified name, any case.
            for i in range(len(parts) - 1):
                rows = self.by_qual_lower.get(".".join(parts[i:]).lower())
                if rows:
                    out = [SymbolMatch(r, "qualname_nocase") for r in sorted(set(rows))]
                    return out[:limit] if limit is not None else out
        return []
