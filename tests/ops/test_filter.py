"""Filters keep order, are idempotent, and mean what they say."""

import pytest
from hypothesis import given, strategies as st

from codenib.ops.filter import (
    drop_tests,
    exclude_paths,
    include_paths,
    is_test_path,
    symbols_only,
    valid_spans,
    with_content,
)
from codenib.ops.retrieve import QueriedNode

PATHS = ["src/pkg/core.py", "tests/test_core.py", "pkg/test/util.py", "pkg/core_test.py", "conftest.py",
         "src/testing_utils.py", "src/pkg/contest.py", "docs/conf.py", "pkg/testing/helpers.py"]


def node(path, kind="function", start=1, end=2, content=None):
    return QueriedNode(f"{path}::f" if kind != "file" else path, path, kind, "f", start, end, 1.0, "t", content)


def test_test_path_rules():
    assert [p for p in PATHS if is_test_path(p)] == [
        "tests/test_core.py", "pkg/test/util.py", "pkg/core_test.py", "conftest.py", "pkg/testing/helpers.py"]


@pytest.mark.parametrize("path, test", [
    ("clientconn_test.go", True), ("internal/transport/http2_client.go", False),
    ("src/__tests__/format.js", True), ("test/plugin/utc.test.js", True), ("src/utils.spec.ts", True),
    ("src/generators/theme.tsx", False), ("src/test/java/com/fasterxml/jackson/core/JsonParserTest.java", True),
    ("src/main/java/com/fasterxml/jackson/core/JsonParser.java", False), ("src/main/java/a/Contest.java", False),
    ("src/main/java/a/LatestTests.java", True), ("tests/integration_tests.rs", True), ("src/printer.rs", False),
    ("src/jv_test.c", True), ("test/format-test.cc", True), ("test/gtest-extra_unittest.cc", True),
    ("src/format.cc", False), ("pkg/core_unittest.py", False),   # Python's rules are unchanged
])
def test_test_paths_of_other_languages(path, test):
    assert is_test_path(path) is test


def test_each_filter():
    cands = (node("a.py"), node("tests/test_a.py"), node("a.py", kind="file"), node("b.py", start=5, end=4),
             node("c.py", content="x = 1"))
    assert [c.file for c in drop_tests(cands)] == ["a.py", "a.py", "b.py", "c.py"]
    assert [c.kind for c in symbols_only(cands)].count("file") == 0
    assert len(valid_spans(cands)) == 4
    assert [c.file for c in with_content(cands)] == ["c.py"]
    assert [c.file for c in include_paths(cands, ["tests/*"])] == ["tests/test_a.py"]
    assert "tests/test_a.py" not in [c.file for c in exclude_paths(cands, ["tests/*"])]


@given(st.lists(st.sampled_from(PATHS), max_size=12), st.sampled_from(["*.py", "src/*", "tests/*"]))
def test_filters_are_idempotent(paths, glob):
    cands = tuple(node(p) for p in paths)
    for f in (drop_tests, symbols_only, valid_spans, lambda c: include_paths(c, [glob]),
              lambda c: exclude_paths(c, [glob])):
        once = f(cands)
        assert f(once) == once


def test_a_rust_test_module_is_test_code_in_rust_files_only():
    from codenib.ops.filter import is_test_definition

    assert is_test_definition("src/size.rs", "tests.parses_min")
    assert is_test_definition("src/a.rs", "imp.test.helper")
    assert not is_test_definition("src/size.rs", "SizeFilter.tests")       # a method named tests
    assert not is_test_definition("src/size.rs", "parse")
    assert is_test_definition("tests/cli.rs", "run")                        # a test path
    assert not is_test_definition("lib/size.py", "tests.parses_min")       # Python: by path only


@pytest.mark.parametrize("path, test", [
    # Maven and Gradle source sets beside src/test/, Failsafe's integration tests
    ("src/it/java/com/x/ParserIT.java", True), ("src/integrationTest/java/a/B.java", True),
    ("src/testFixtures/java/a/Fixture.java", True), ("src/main/java/a/ParserIT.java", True),
    ("src/main/java/com/x/UTF8Writer.java", False), ("src/main/java/com/x/ITEM.java", False),
    # Go test-support packages and generated test protos
    ("internal/testutils/pipe_listener.go", True), ("credentials/alts/internal/testutil/testutil.go", True),
    ("reflection/grpc_testing/test.pb.go", True), ("testdata/x509/server.go", True),
    ("internal/transport/transport.go", False), ("attestation/verify.go", False), ("latest/api.go", False),
    ("github.com/stretchr/testify/assert.go", False),
    # JavaScript/TypeScript end-to-end suites and fixtures
    ("e2e/app.e2e-spec.ts", True), ("src/app.e2e.ts", True), ("cypress/support/commands.js", True),
    ("src/__fixtures__/dates.js", True), ("packages/core/test-utils/render.tsx", True),
    ("src/utils/testable.ts", False), ("src/contest.js", False),
    # C and C++ test files outside a test folder
    ("src/format-test.cc", True), ("src/jv_test.h", True), ("src/test_parser.c", True),
    ("src/testing.c", False), ("src/attest.c", False), ("include/fmt/format.h", False),
    # Python's paths are judged by its own rules alone: these stay library code
    ("pylint/testutils/checker_test_case.py", False), ("src/e2e/run.py", False),
])
def test_test_paths_by_build_tool_and_repository_layout(path, test):
    assert is_test_path(path) is test
