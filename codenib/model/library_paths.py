"""Which repository paths hold library code: bug localisation ranks tests
(`codenib.ops.filter.is_test_path`), documentation, examples, benchmarks, tools, build files
and vendored scripts below the library a fix changes (`localise.library_first`)."""

from __future__ import annotations

import re

from codenib.ops.filter import is_test_path

#: Paths that hold documentation, examples or benchmarks rather than the library.
_NONLIB = re.compile(r"(^|/)(docs?|examples?|bench(marks?)?|scripts?|tools?|extra)/")
#: The same, by one language's own conventions (file suffix -> pattern), so that no other
#: language's paths change: Cargo's build scripts and `benches/`, TypeScript declaration files
#: (types only: the code they describe lives elsewhere).
#: JavaScript copied into a repository rather than written there (as source-hosting sites count
#: vendored code): minified or bundled files, vendor folders, gettext catalogues compiled to JS,
#: and, inside a folder of static web assets, the browser libraries projects most often ship
#: (outside one, `src/moment.js` is the moment project's own code).
_VENDORED_JS = re.compile(r"(^|/)(vendors?|third[_-]?party|bower_components|LC_MESSAGES)/|[.-]min\.[cm]?js$"
                          r"|\.bundle\.js$|(^|/)(static|assets|public)/([^/]+/)*(jquery|underscore|lodash|"
                          r"backbone|bootstrap|require|modernizr|d3|angular|react(-dom)?|vue|moment)([.-][^/]*)?\.js$")
#: JavaScript and TypeScript build and test-runner configuration (karma, jest, webpack, rollup,
#: babel, vite, gulp, grunt, eslint): build files, never the library a fix changes.
_JS_BUILD = re.compile(r"(^|/)((karma|webpack|jest|rollup|babel|vite|vitest|tsup|eslint|prettier|postcss|"
                       r"tailwind|playwright|cypress|commitlint|esbuild|stylelint|protractor|wdio|nightwatch|"
                       r"rspack|svelte|astro|nuxt|next)([.-][\w-]+)*\.conf(ig)?"
                       r"([.-][\w-]+)*|[gG]ulpfile|[gG]runtfile|\.(eslint|babel|prettier|mocha|stylelint)rc)"
                       r"(\.[\w-]+)*\.[cm]?[jt]s$"
                       # Storybook's stories and its configuration folder: component samples
                       r"|\.stories\.[cm]?[jt]sx?$|(^|/)\.storybook/")
#: Fuzzing harnesses of C, C++ and Rust projects (`fuzz/`, `fuzzing/`): test drivers.
_FUZZ = re.compile(r"(^|/)fuzz(ing)?/")
#: Examples, benchmarks and build tooling by the other languages' layouts, for every file but
#: Python's (whose paths keep `_NONLIB` alone, the rule the localisation weights were fitted
#: on): `benches/` (Cargo, also C and C++), `samples/` and `demos/`, JMH benchmarks and the
#: Maven site under `src/`, Cargo's `xtask/`, Go's `hack/` scripts, a project's `website/`.
_NONLIB_OTHER = re.compile(r"(^|/)(benches|_?samples?|_?demos?|_examples|xtask|hack)/|(^|/)src/(jmh|site)/"
                           r"|^website/")
_NONLIB_BY_SUFFIX = (
    (".rs", re.compile(r"(^|/)(build\.rs$|benches/|fuzz/)")),
    (".js", _VENDORED_JS), (".mjs", _VENDORED_JS), (".cjs", _VENDORED_JS),
    (".js", _JS_BUILD), (".mjs", _JS_BUILD), (".cjs", _JS_BUILD), (".ts", _JS_BUILD),
    (".mts", _JS_BUILD), (".cts", _JS_BUILD), (".jsx", _JS_BUILD), (".tsx", _JS_BUILD),
    (".c", _FUZZ), (".cc", _FUZZ), (".cpp", _FUZZ), (".cxx", _FUZZ),
    (".ts", re.compile(r"\.d\.ts$")),
    (".mts", re.compile(r"\.d\.mts$")),
    (".cts", re.compile(r"\.d\.cts$")),
)
#: Python's suffixes: its paths are judged by `_NONLIB` alone.
_PYTHON_SUFFIXES = (".py", ".pyx", ".pyi")


def is_library_path(path: str) -> bool:
    """Library code: neither tests nor documentation, examples, tools or build files."""
    return not is_test_path(path) and not is_nonlib_path(path)


def is_nonlib_path(path: str) -> bool:
    """Documentation, examples, benchmarks, scripts and tools; the other languages' layouts
    for these (`_NONLIB_OTHER`: `benches/`, `samples/`, JMH, `xtask/`; Python's paths keep the
    language-neutral folders alone); per language, its build-time, declaration-only or vendored
    files (`_NONLIB_BY_SUFFIX`: Cargo's `build.rs`, `.d.ts`, `karma.conf.js`, stories)."""
    if _NONLIB.search(path):
        return True
    if not path.endswith(_PYTHON_SUFFIXES) and _NONLIB_OTHER.search(path):
        return True
    return any(path.endswith(suffix) and pattern.search(path) for suffix, pattern in _NONLIB_BY_SUFFIX)
