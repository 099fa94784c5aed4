"""The repository's history in retrieval (indexes built with `--history`).

`evidence`: the history signals a plan may ask for and the additive prior that adds them to
the localisation ranking; `cochange`: the bug_localisation plan's co-change expansion step;
`fit`: localisation weights fitted to one repository on its own past (`codenib index
--history --fit-weights`). The plan's weights (`evidence.WEIGHTS`, `cochange.COCHANGE_WEIGHT`)
are read from their modules, where tests and scripts set them: they are not copied here.
"""

from codenib.model.history.evidence import SIGNALS, EvidenceCache, HistorySignal, rank_with_history
from codenib.model.history.fit import FIT_VERSION, FitResult, fit_history

__all__ = ["EvidenceCache", "FIT_VERSION", "FitResult", "HistorySignal", "SIGNALS", "fit_history", "rank_with_history"]
