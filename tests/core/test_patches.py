"""Which old lines a unified diff touches (`codenib.core.patches`): literal diffs with
hand-computed lines, and difflib as the oracle for random edits."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codenib.core.errors import BadInputError
from codenib.core.patches import read_patch

PATCH = """\
diff --git a/pkg/m.py b/pkg/m.py
--- a/pkg/m.py
+++ b/pkg/m.py
@@ -2,4 +2,5 @@ def f():
     a = 1
-    b = 2
+    b = 3
+    c = 4
     return a
 
@@ -10,0 +12,2 @@ def g():
+def h():
+    pass
diff --git a/new.py b/new.py
new file mode 100644
--- /dev/null
+++ b/new.py
@@ -0,0 +1 @@
+x = 1
diff --git a/old.py b/old.py
deleted file mode 100644
--- a/old.py
+++ /dev/null
@@ -1,2 +0,0 @@
-y = 1
-z = 2
"""


def test_removed_lines_count_themselves_and_added_lines_the_line_they_follow():
    m, new, old = read_patch(PATCH)
    # Line 3 removed; the two added lines follow it (3); "-10,0" inserts after line 10.
    assert (m.path, m.new_path, m.touched) == ("pkg/m.py", "pkg/m.py", (3, 10))
    assert dict(m.expects) == {2: "    a = 1", 3: "    b = 2", 4: "    return a", 5: ""}
    assert new.added and new.path is None and new.new_path == "new.py" and new.touched == (0,)
    assert old.removed and old.path == "old.py" and old.touched == (1, 2)


def test_an_insertion_at_the_top_of_a_hunk_follows_the_line_before_the_hunk():
    patch = "--- a/x.py\n+++ b/x.py\n@@ -5,2 +5,3 @@\n+first\n five\n six\n"
    (change,) = read_patch(patch)
    assert change.touched == (4,)
    assert dict(change.expects) == {5: "five", 6: "six"}


def test_no_newline_marker_is_not_a_line():
    patch = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"
    (change,) = read_patch(patch)
    assert change.touched == (1,) and dict(change.expects) == {1: "a"}


@pytest.mark.parametrize("text", ["not a diff at all\n", "--- a/x\n+++ b/x\n@@ -1,3 +1,1 @@\n-a\n"])
def test_text_that_is_not_a_unified_diff_is_bad_input(text):
    with pytest.raises(BadInputError, match="unified diff"):
        read_patch(text)


lines = st.lists(st.sampled_from(["a", "b", "c", "def f():", "    return 1", ""]), max_size=25)


@settings(max_examples=150, deadline=None)
@given(old=lines, new=lines, context=st.integers(0, 3))
def test_against_difflib_every_removed_line_is_touched_and_every_shown_line_is_the_old_one(old, new, context):
    diff = "".join(difflib.unified_diff([x + "\n" for x in old], [x + "\n" for x in new], "a/f.py", "b/f.py",
                                        n=context))
    changes = read_patch(diff)
    if old == new:
        assert changes == []
        return
    (change,) = changes
    removed = {i + 1 for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, old, new).get_opcodes()
               if tag in ("delete", "replace") for i in range(i1, i2)}
    assert removed <= set(change.touched)
    assert all(0 <= n <= len(old) for n in change.touched)
    assert all(old[n - 1] == text for n, text in change.expects)
