"""Companion files (`lang.companions`): `declares` edges from declarations to definitions on
small repositories written here (C header and source, C++ class, `.d.ts` and JavaScript, Java
interface and implementations), every edge read off the sources by hand."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from codenib.compiler.lang import graph_of, read_foreign
from codenib.compiler.lang.companions import DECLARES, companion_edges, declared_names
from codenib.compiler.lang.contains import foreign_contains
from codenib.compiler.lang.facts_graph import foreign_edges, read_manifests
from codenib.compiler.source import FolderTree
from codenib.core.types import nodes_to_table

C_REPO = {
    "include/jv.h": ("#ifndef JV_H\n#define JV_H\ntypedef struct jv { int kind; } jv;\n"
                     "/* jv_parse(text): parse a value */\njv jv_parse(const char *text);\n"
                     "void jv_free(jv value);\n#endif\n"),
    "src/jv.c": ('#include "jv.h"\n\nstatic const char *skip_ws(const char *p) {\n    while (*p == \' \') p++;\n'
                 "    return p;\n}\n\njv jv_parse(const char *text) {\n    jv v;\n    v.kind = *skip_ws(text);\n"
                 "    return v;\n}\n\nvoid jv_free(jv value) {\n    (void)value;\n}\n"),
    # Calls what the header declares and defines none of it: no edge.
    "src/main.c": ('#include "jv.h"\n\nint main(void) {\n    jv v = jv_parse("1");\n    jv_free(v);\n'
                   "    return 0;\n}\n"),
}

CPP_REPO = {
    "include/shape.hpp": ("#pragma once\nnamespace geo {\nclass Circle {\n public:\n  explicit Circle(double r);\n"
                          "  double area() const;\n private:\n  double r_;\n};\n}  // namespace geo\n"),
    "src/shape.cpp": ('#include "shape.hpp"\n\nnamespace geo {\ndouble Circle::area() const {\n'
                      "  return 3.14 * r_ * r_;\n}\n}  // namespace geo\n"),
}

TS_REPO = {
    "types/index.d.ts": ("export declare function parse(text: string): number;\nexport declare class Parser {\n"
                         "  run(): void;\n}\n"),
    "src/index.js": ("function parse(text) {\n  return Number(text);\n}\n\nclass Parser {\n  run() {\n"
                     '    return parse("1");\n  }\n}\n\nmodule.exports = { parse, Parser };\n'),
    # A declaration file of function signatures only (no nodes but its file): linked file to file.
    "types/plugin/utc.d.ts": "export declare function utc(date?: string): number;\n",
    "src/plugin/utc/index.js": "module.exports = function utc(date) {\n  return Date.parse(date);\n};\n",
}

_J = "src/main/java/org/kv/"
JAVA_REPO = {
    _J + "Store.java": "package org.kv;\n\npublic interface Store {\n    void put(String key);\n}\n",
    _J + "MemoryStore.java": ("package org.kv;\n\npublic class MemoryStore implements Store {\n    @Override\n"
                              "    public void put(String key) {\n        System.out.println(key);\n    }\n}\n"),
    # `put` is left abstract here: the interface's method is found two levels up from DiskStore.
    _J + "Base.java": ("package org.kv;\n\npublic abstract class Base implements Store {\n"
                       "    protected void log(String s) {\n        System.out.println(s);\n    }\n}\n"),
    _J + "DiskStore.java": ("package org.kv;\n\npublic class DiskStore extends Base {\n    @Override\n"
                            "    public void put(String key) {\n        log(key);\n    }\n}\n"),
}


def _declares(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, str, int]]:
    """(src, dst, count) of the `declares` edges of a repository of these files."""
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    paths = sorted(files)
    nodes, facts, sources = [], {}, {}
    for rel in paths:
        if graph_of(rel) == "facts":
            sources[rel] = files[rel].encode()
            parsed = read_foreign(rel, sources[rel])
            nodes += parsed.nodes
            facts[rel] = parsed.facts
    table = nodes_to_table(nodes)
    edges = pa.concat_tables([foreign_contains(table), foreign_edges(
        table, facts, paths, read_manifests(FolderTree(tmp_path).read_path, paths))])
    out = companion_edges(table, edges, sources)
    assert set(out.column("type").to_pylist()) <= {DECLARES}
    return {(e["src"], e["dst"], e["count"]) for e in out.to_pylist()}


def test_a_c_header_declares_what_its_source_defines(tmp_path):
    assert _declares(tmp_path, C_REPO) == {
        ("include/jv.h", "src/jv.c", 2),
        ("include/jv.h", "src/jv.c::jv_free", 1),
        ("include/jv.h", "src/jv.c::jv_parse", 1),
    }


def test_a_cpp_class_in_a_header_declares_its_method_defined_out_of_line(tmp_path):
    assert _declares(tmp_path, CPP_REPO) == {
        ("include/shape.hpp", "src/shape.cpp", 1),
        ("include/shape.hpp::geo.Circle", "src/shape.cpp::geo.Circle.area", 1),
    }


def test_a_declaration_file_types_the_javascript_module_of_its_path(tmp_path):
    # `types/index.d.ts` types `src/index.js` (its path less the leading folder); function
    # signatures are no nodes of the TypeScript reader, so `parse` is not linked.
    assert _declares(tmp_path, TS_REPO) == {
        ("types/index.d.ts", "src/index.js", 2),
        ("types/index.d.ts::Parser", "src/index.js::Parser", 1),
        ("types/index.d.ts::Parser.run", "src/index.js::Parser.run", 1),
        ("types/plugin/utc.d.ts", "src/plugin/utc/index.js", 1),
    }


def test_an_interface_method_declares_its_implementations(tmp_path):
    assert _declares(tmp_path, JAVA_REPO) == {
        (_J + "Store.java", _J + "DiskStore.java", 1),
        (_J + "Store.java", _J + "MemoryStore.java", 1),
        (_J + "Store.java::Store.put", _J + "DiskStore.java::DiskStore.put", 1),
        (_J + "Store.java::Store.put", _J + "MemoryStore.java::MemoryStore.put", 1),
    }


def test_declared_names_reads_prototypes_and_skips_bodies_comments_and_macros():
    header = (
        "#ifndef JV_H\n#define JV_H\n#include <stddef.h>\n"
        "/* jv_parse(text) parses */\n"                                   # a comment: nothing
        "typedef struct jv jv;\n"
        "jv jv_parse(const char *text);\n"
        "void jv_free(jv);\n"
        "static inline int jv_is_valid(jv v) { return check(v); }\n"     # defined here; `check` is a call
        "#define JV_ARRAY(...) make(__VA_ARGS__)\n"                      # a macro
        "int (*callback)(int);\n"                                        # a function pointer
        'extern "C" { int ext_fn(void); }\n'
        "namespace ns { class K { public: void run() const; ~K(); }; }\n"
        "#endif\n")
    assert declared_names(header) == {"jv_parse", "jv_free", "ext_fn", "run"}
