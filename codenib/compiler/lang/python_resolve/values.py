"""The value type every resolve module shares: the bottom of `codenib.compiler.lang.python_resolve`."""

# A value the inferencer can name: (kind, ref) with kind module | class | instance | func,
# ("funcs", ids joined by newlines) for a name bound to one of several definitions, and for
# typed containers of instances of a class: ("iter", class id) a collection or iterator of
# them, ("map", class id) a mapping to them, ("pairs", class id) an iterator of (key, them);
# ("tuple", class ids joined by newlines, "" where unknown) for `Tuple[A, B]`.
Value = tuple[str, str]
