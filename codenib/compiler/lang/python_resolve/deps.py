"""What one unit's edges depend on outside the unit, as keys with digests.

While a unit's edges are collected (`Names.begin_unit`), the resolver notes every binding it
reads outside its own text (`ModuleTable.reads`), in its own file or in others. A fact is a key:

| key | what was read | digest covers |
|---|---|---|
| `("n", owner, name)` | the bindings of `name` in the scope of `owner` (a file, class or function), `"*"` for star imports | the scope's kind and its chain of enclosing scopes, whether `name` is declared global, and every source bound to it (expressions as `ast.dump`, evaluated in which scope) |
| `("d", node_id)` | a class or function definition | its kind, enclosing definition, and header: decorators, arguments, return annotation, bases |
| `("c", class_id, name)` | what a class binds to `name` | the member definition, the property getter, the attribute sources |
| `("m", module)` | which file a module name stands for | that file's path and whether it parsed |
| `("p", name)` | whether `name` is a module or the prefix of one | the answer |

The digest of a key is a pure function of its owner file's content and module-table facts
(its module name and the file that won that name), so an unchanged file's keys keep their
digests. A unit's edges are reused only when its text and every key it read are unchanged.
"""

from __future__ import annotations

import ast
import hashlib
from typing import Callable

from codenib.compiler.lang.python_resolve.infer import Resolver
from codenib.compiler.lang.python_resolve.scopes import Scope
from codenib.core.types import file_of

#: Bumped whenever what a file's edges are, or what they read, can change for the same
#: sources: a later build reuses an earlier index's edges only under the same version.
RESOLVE_VERSION = 2
#: Joins the parts of a key in its string form (never inside a path, a name or an id).
KEY_SEP = "\x1f"
#: Digest of a key whose scope, definition or class does not exist (or did not parse).
ABSENT = "-"


def key_string(key: tuple) -> str:
    """The stored form of a key tuple."""
    return KEY_SEP.join(key)


def key_tuple(text: str) -> tuple:
    """A key tuple back from its stored form."""
    return tuple(text.split(KEY_SEP))


def key_owner(key: tuple) -> str:
    """The file whose content decides the key's digest ('' for module-table keys)."""
    kind = key[0]
    if kind in ("n", "d", "c"):
        return file_of(key[1])
    return ""


def key_digest(resolver: Resolver, key: tuple, parsed: Callable[[str], bool]) -> str:
    """The digest of `key` in the resolver's current bindings.

    Args:
        parsed: whether a repository file parsed (module-table keys record it: a module
            whose file has a syntax error binds nothing).
    """
    kind = key[0]
    if kind == "n":
        text = _names_text(resolver, key[1], key[2])
    elif kind == "d":
        text = _def_text(resolver, key[1])
    elif kind == "c":
        text = _member_text(resolver, key[1], key[2])
    elif kind == "m":
        path = resolver.modules.get(key[1])
        text = ABSENT if path is None else f"{path}|{parsed(path)}"
    elif kind == "p":
        text = str(key[1] in resolver._module_prefixes)
    else:
        raise ValueError(f"unknown dependency key {key!r}")
    if text == ABSENT:
        return ABSENT
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


# --- helpers ---------------------------------------------------------------------------------

def _scope_of(resolver: Resolver, owner: str) -> Scope | None:
    if "::" in owner:
        return resolver.def_scopes.get(owner)
    return resolver.file_scopes.get(owner)


def _names_text(resolver: Resolver, owner: str, name: str) -> str:
    scope = _scope_of(resolver, owner)
    if scope is None:
        return ABSENT
    chain = []
    walk: Scope | None = scope
    while walk is not None:
        chain.append(f"{walk.kind}:{walk.owner}")
        walk = walk.parent
    parts = ["/".join(chain), str(name in scope.globals_), str(name in scope.declared_global)]
    parts.extend(_source_text(s) for s in scope.bindings.get(name, ()))
    return "\n".join(parts)


def _def_text(resolver: Resolver, node_id: str) -> str:
    d = resolver.defs.get(node_id)
    if d is None:
        return ABSENT
    scope = resolver.def_scopes.get(node_id)
    parent = scope.parent.owner if scope is not None and scope.parent is not None else ""
    return "\n".join([d.kind, d.parent.node_id if d.parent else "", parent, _header_text(d.tree)])


def _member_text(resolver: Resolver, class_id: str, name: str) -> str:
    members = resolver.class_members.get(class_id)
    if members is None:
        return ABSENT
    parts = [str(members.get(name)), str(resolver.class_properties.get(class_id, {}).get(name))]
    parts.extend(_source_text(s) for s in resolver.class_attr_sources.get(class_id, {}).get(name, ()))
    return "\n".join(parts)


def _header_text(tree: ast.AST) -> str:
    """A definition as resolution sees it: everything but the body (which trimming drops)."""
    parts = [type(tree).__name__, tree.name]
    parts.extend(ast.dump(dec) for dec in tree.decorator_list)
    if isinstance(tree, ast.ClassDef):
        parts.extend(ast.dump(b) for b in tree.bases)
        parts.extend(ast.dump(k) for k in tree.keywords)
    else:
        parts.append(ast.dump(tree.args))
        parts.append(ast.dump(tree.returns) if tree.returns is not None else "")
    return "\n".join(parts)


def _source_text(source: tuple) -> str:
    """A binding source as text: expressions by their syntax, scopes by their owner."""
    out = []
    for part in source:
        if isinstance(part, ast.AST):
            out.append(ast.dump(part))
        elif isinstance(part, Scope):
            out.append(f"@{part.kind}:{part.owner}")
        else:
            out.append(repr(part))
    return " ".join(out)
