"""The bug-report reader: the code a report mentions, resolved against an index.

`report` reads a report (`read_report`) into mentions and resolves them into file and node
priors (`resolve_mentions`); `traces` parses its stack-trace frames in every format
(`parse_frames`), with the per-format line readers in `formats`, the frame-name normalisers in
`names` and the mapping of a frame's path onto the indexed files in `files`.
"""

from codenib.model.reports.files import repository_files
from codenib.model.reports.report import BugReport, Mention, Prior, about_tests, read_report, resolve_mentions
from codenib.model.reports.traces import Frame, parse_frames

__all__ = ["BugReport", "Frame", "Mention", "Prior", "about_tests", "parse_frames", "read_report",
           "repository_files", "resolve_mentions"]
