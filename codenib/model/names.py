"""How a bug report's words meet a definition's name: the exact name (`distinctive` names a
report means when it writes them) and the name's words in any spelling (`name_words`), for the
localisation features `n_named`, `n_parent_named` and `n_name_words`."""

from __future__ import annotations

import re
from functools import lru_cache

from codenib.core.tokens import split_identifier

#: Separators inside a qualified name or node id suffix (`C.f`, `f#2`).
_SEPARATORS = re.compile(r"[^A-Za-z0-9_]+")


def distinctive(name: str) -> bool:
    """A name that means one thing when a report writes it: long, or shaped like code."""
    return len(name) >= 4 and not (name.startswith("__") and name.endswith("__"))


@lru_cache(maxsize=1 << 16)
def name_words(name: str) -> frozenset[str]:
    """The words of a name (`split_identifier`'s snake_case and CamelCase parts, lower case, a
    plural `s` dropped), three letters or more: `AttributeDocumenter.add_directive_header` ->
    attribute, documenter, add, directive, header. Cached: a repository's names recur in every
    report."""
    out = set()
    for piece in _SEPARATORS.split(name):
        for word in split_identifier(piece) if piece else ():
            word = word.lower()
            if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
                word = word[:-1]
            if len(word) >= 3:
                out.add(word)
    return frozenset(out)


__all__ = ["distinctive", "name_words"]
