"""`codenib index --help` says what the options do (issue 38 item 13)."""

from __future__ import annotations

import pytest

from codenib.commands.cli import main


def test_max_file_bytes_help_names_every_language_not_only_python(capsys):
    with pytest.raises(SystemExit):
        main(["index", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    start = text.rindex("--max-file-bytes N")   # the option list, after the usage line
    help_text = text[start:text.index("--", start + 20)]
    assert ".py files" not in help_text and "every language" in help_text
