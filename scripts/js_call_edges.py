#!/usr/bin/env python
"""Precision and recall of CodeNib's JavaScript `calls` edges in express's lib/response.js and
lib/application.js against a hand-checked reference (and, optionally, the TypeScript checker).

express is no dev-set repository: it is the graph check of issue 41's class 7 (methods
assigned to an object calling one another through `this`, and a `require` shadowing a
same-named definition), not something to tune to. The reference (`REFERENCE`) is every call
in the two files, read by hand at express a3714473 (2025), whose callee is a definition node of
lib/*.js: `this.m()` inside `res.x = function` is `res.m`, `var self = this` makes `self` an
alias, `res.set = res.header = function header` makes `this.set()` a call of `header`; express's
own wiring counts (`this.app` is the application, `this.req` the request, `this.parent` the
parent application). Left out: calls of values passed as arguments or held in variables
(`callback()`, `done()`, `obj.default()`), and `app.get(...)`, whose definition is a function
made in a loop (`app[method] = function`), no node.

    git --git-dir=MIRROR archive a3714473 | tar -x -C /tmp/express
    codenib index /tmp/express --out /tmp/express-idx --no-dense
    python scripts/js_call_edges.py /tmp/express-idx [/tmp/express-idx-other ...]

`--ts-oracle FILE` also compares with the TypeScript checker's resolution (allowJs, checkJs),
FILE being what `node scripts/ts_call_oracle.js /tmp/express lib/response.js lib/application.js`
prints with the `typescript` npm package installed beside it (offline once installed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow.parquet as pq

R, A, U, Q, V = "lib/response.js", "lib/application.js", "lib/utils.js", "lib/request.js", "lib/view.js"
FILES = (R, A)

#: (caller, callee) node ids: every call of the two files whose callee is a definition of lib/.
REFERENCE: frozenset[tuple[str, str]] = frozenset((f"{cf}::{c}" if c else cf, f"{tf}::{t}") for cf, c, tf, t in [
    # lib/response.js
    (R, "links", R, "get"), (R, "links", R, "header"),
    (R, "send", R, "get"), (R, "send", R, "header"), (R, "send", U, "setCharset"), (R, "send", R, "type"),
    (R, "send", R, "json"), (R, "send", R, "status"),
    (R, "json", R, "stringify"), (R, "json", R, "get"), (R, "json", R, "header"), (R, "json", R, "send"),
    (R, "jsonp", R, "stringify"), (R, "jsonp", R, "get"), (R, "jsonp", R, "header"), (R, "jsonp", R, "send"),
    (R, "sendStatus", R, "status"), (R, "sendStatus", R, "type"), (R, "sendStatus", R, "send"),
    (R, "sendFile", R, "sendfile"), (R, "sendFile", A, "enabled"),          # this.app.enabled('etag')
    (R, "download", R, "sendFile"),
    (R, "type", R, "header"),
    (R, "format", Q, "accepts"),                                            # req = this.req
    (R, "format", R, "vary"), (R, "format", R, "header"), (R, "format", U, "normalizeType"),
    (R, "format", U, "normalizeTypes"),
    (R, "attachment", R, "type"), (R, "attachment", R, "header"),
    (R, "append", R, "get"), (R, "append", R, "header"),
    (R, "header", R, "header"),                                             # this.set(key, ...)
    (R, "clearCookie", R, "cookie"),
    (R, "cookie", R, "append"),
    (R, "location", R, "header"),
    (R, "redirect", R, "location"), (R, "redirect", R, "get"),              # this.location(a).get(...)
    (R, "redirect", R, "format"), (R, "redirect", R, "status"), (R, "redirect", R, "header"),
    (R, "render", A, "render"), (R, "render", R, "send"),                   # app = this.req.app; self.send
    (R, "sendfile.onfinish", R, "sendfile.onaborted"), (R, "sendfile.onfinish", R, "sendfile.onerror"),
    # lib/application.js
    (A, "init", A, "defaultConfiguration"),
    (A, "init.get", A, "enabled"),                                          # the `router` getter of the app
    (A, "defaultConfiguration", A, "enable"), (A, "defaultConfiguration", A, "set"),
    (A, "handle", A, "enabled"),
    (A, "param", A, "param"),
    (A, "set", A, "set"), (A, "set", U, "compileETag"), (A, "set", U, "compileQueryParser"),
    (A, "set", U, "compileTrust"),
    (A, "path", A, "path"),                                                 # this.parent.path()
    (A, "enabled", A, "set"), (A, "disabled", A, "set"), (A, "enable", A, "set"), (A, "disable", A, "set"),
    (A, "", A, "set"), (A, "", A, "route"),                                 # app[method] = function: the file's
    (A, "all", A, "route"),
    (A, "render", A, "enabled"), (A, "render", V, "View"), (A, "render", A, "tryRender"),
    (A, "tryRender", V, "View.render"),
])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("indexes", nargs="+", help="index folders of express (codenib index --no-dense)")
    parser.add_argument("--ts-oracle", help="the TSV scripts/ts_call_oracle.js printed")
    args = parser.parse_args(argv)
    for folder in args.indexes:
        got = _calls(Path(folder))
        print(f"{folder}: {_score(got, REFERENCE)}")
        for label, edges in (("extra", got - REFERENCE), ("missed", REFERENCE - got)):
            for src, dst in sorted(edges):
                print(f"  {label:6} {src} -> {dst}")
        if args.ts_oracle:
            oracle = _oracle(Path(args.ts_oracle), Path(folder))
            print(f"  TypeScript checker: {len(oracle)} edges, {len(oracle & REFERENCE)} of them in the reference; "
                  f"against them: {_score(got, oracle)}")
            for src, dst in sorted(oracle - got):
                print(f"  ts-only {src} -> {dst}")
    return 0


def _score(got: set, truth: set) -> str:
    hits = len(got & truth)
    precision = hits / len(got) if got else 0.0
    recall = hits / len(truth) if truth else 0.0
    return f"precision {precision:.3f} ({hits}/{len(got)}), recall {recall:.3f} ({hits}/{len(truth)})"


def _calls(folder: Path) -> set[tuple[str, str]]:
    edges = pq.read_table(folder / "edges.parquet").to_pylist()
    return {(e["src"], e["dst"]) for e in edges
            if e["type"] == "calls" and e["src"].split("::")[0] in FILES and e["dst"].startswith("lib/")}


def _oracle(tsv: Path, folder: Path) -> set[tuple[str, str]]:
    """The checker's calls as node ids: the caller is the innermost definition around the
    call's line (the file outside all), the callee the innermost definition around the line
    of the declaration it names."""
    nodes = pq.read_table(folder / "nodes.parquet", columns=["node_id", "kind", "file", "start_line", "end_line"])
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for n in nodes.to_pylist():
        if n["kind"] != "file":
            spans.setdefault(n["file"], []).append((n["start_line"], n["end_line"], n["node_id"]))

    def innermost(rel: str, line: int) -> str | None:
        around = [s for s in spans.get(rel, ()) if s[0] <= line <= s[1]]
        return max(around, key=lambda s: (s[0], -s[1]))[2] if around else None

    out = set()
    for row in tsv.read_text().splitlines():
        parts = row.split("\t")
        if len(parts) < 5 or not parts[3].startswith("lib/"):
            continue
        caller = innermost(parts[0], int(parts[1])) or parts[0]
        callee = innermost(parts[3], int(parts[4]))
        if callee is not None and parts[0] in FILES:
            out.add((caller, callee))
    return out


if __name__ == "__main__":
    sys.exit(main())
