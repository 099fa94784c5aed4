"""The options of the batch jobs, declared once (field metadata: `codenib.core.options`).

`JobOptions` holds what every job has: where rows come from and go, and how it runs on Ray.
`RunOptions` (`codenib run`) and `RerankOptions` (`codenib rerank`) add their own. The
command-line flags, the job-spec checks and `validate` are generated from these fields.
Light imports only: the command line builds its parser from them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from codenib.engines.backends import BACKENDS
from codenib.core.errors import BadInputError
from codenib.model.planner import RUN_MODES
from codenib.model.planspec import BUDGETS, PlanOptions
from codenib.model.planner import RERANKERS as PLAN_RERANKERS
from codenib.core.options import DEVICES, option, required, validate_options

#: `codenib run --mode`: a planner mode, or all: every fixed mode for every query.
JOB_MODES = RUN_MODES
#: `codenib run --encoder`: a backend name (queries are always encoded by the index's backend).
ENCODER_BACKENDS = tuple(BACKENDS)
#: `codenib rerank --reranker`: the rerankers (the planner's "none" means no rerank).
RERANKERS = tuple(r for r in PLAN_RERANKERS if r != "none")
#: The Ray-job flags both commands have, in --help order.
JOB_FLAGS = ("llm", "address", "shard_size", "workers", "run_tag", "device", "force")


@dataclass(frozen=True, kw_only=True)
class JobOptions:
    """The options every job has (help texts are those of `codenib run`; see `HELP`)."""

    #: Per-command metadata overrides (help, metavar) of inherited options.
    HELP: ClassVar[dict[str, dict[str, str]]] = {}
    #: The options that are command-line flags, in --help order.
    FLAGS: ClassVar[tuple[str, ...]] = ()

    queries: str | None = option(None, metavar="QUERIES", path=True,
                                 help="query set: Parquet or JSONL with qid, query (and optionally index, budget, mode)")
    out: str = option(metavar="RESULTS_DIR", path=True, help="results folder (resumed when it holds this same job)")
    index: str | None = option(None, metavar="INDEX_DIR", path=True, help="one index for every query")
    index_root: str | None = option(None, metavar="DIR", path=True,
                                    help="resolve each query's `index` column under DIR")
    llm: dict | None = option(None, flag="--llm-config", alias="llm_config", metavar="FILE",
                              help="LLM reranker settings (TOML/JSON: endpoint, model, ...)")
    address: str | None = option(None, metavar="RAY_ADDRESS",
                                 help="join a Ray cluster (default: an embedded local Ray)")
    shard_size: int = option(256, minimum=1,
                             help="queries per shard: the unit of resume and parallelism")
    workers: int | None = option(None, minimum=1, fix="leave it out to size to the cluster",
                                 help="graph actors (default: one per CPU, at most 16)")
    run_tag: str | None = option(None, help="the run_tag column (default: codenib-MODE-BUDGET)")
    device: str = option("auto", choices=DEVICES, help="dense and rerank actors' device")
    force: bool = option(False, help="go on in a results folder that also holds files CodeNib did not "
                                     "write, deleting them (without it: exit 2 naming the first)")
    progress: bool = option(True, flag="--quiet", quiet=True, help="no progress bar")

    def validate(self) -> None:
        """Check option values (exit 2 with the valid choices)."""
        validate_options(self)


@dataclass(frozen=True, kw_only=True)
class RunOptions(JobOptions):
    """Every option of `codenib run` (a job spec in jobs/ holds the same fields)."""

    FLAGS: ClassVar[tuple[str, ...]] = ("queries", "index", "index_root", "out", "budget", "mode", "k", "rerank",
                                        "localise_weights", "encoder", *JOB_FLAGS, "local_below", "index_cache",
                                        "index_cache_bytes", "actor_memory", "actor_resources", "dashboard",
                                        "progress")

    queries: str = required(JobOptions, "queries")
    budget: str = option("balanced", choices=tuple(BUDGETS), help="how much work each query may cost")
    mode: str = option("auto", choices=JOB_MODES,
                       help="auto: the planner chooses per query; all: every plan for every query (planner "
                            "regret)")
    k: int = option(100, flag="-k", minimum=1, help="results kept per query")
    rerank: str | None = option(None, choices=PLAN_RERANKERS, label="reranker",
                                help="force a reranker (default: the budget decides)")
    localise_weights: str | None = option(None, metavar="FILE", path=True,
                                          help="bug-report localisation weights (JSON from scripts/swebench_dev.py "
                                               "--fit; default: each index's fitted weights (codenib index "
                                               "--fit-weights), else the packaged ones)")
    encoder: str | None = option(None, choices=ENCODER_BACKENDS,
                                 help="query encoder backend (default: each index's own; another one is refused)")
    local_below: int = option(256, minimum=0,
                              help="a job of fewer queries runs in this process without Ray, unless --address is "
                                   "given (0: always Ray)")
    max_indexes: int = option(4, help="loaded indexes each actor keeps (job specs only)")
    index_cache: str | None = option(None, metavar="DIR", path=True,
                                     help="node-local cache of indexes copied from object storage, on every node "
                                          "(default: $CODENIB_CACHE_DIR/indexes or ~/.cache/codenib/indexes)")
    index_cache_bytes: int = option(50 * 2**30, minimum=1, metavar="BYTES",
                                    help="bound of that cache per node; least recently used copies go first "
                                         "(default: 50 GiB)")
    actor_memory: int | None = option(None, minimum=1, metavar="BYTES",
                                      help="bound on the bytes of loaded indexes each actor keeps (manifest sizes of "
                                           "the parts it loads), besides max_indexes; least recently used go first "
                                           "(default: no byte bound)")
    actor_resources: str | None = option(None, metavar="NAME=AMOUNT[,...]",
                                         help="Ray custom resources every actor asks for (e.g. retrieval=1: only "
                                              "nodes started with --resources '{\"retrieval\": N}' take actors)")
    dashboard: bool = option(False, help="start the Ray dashboard on 127.0.0.1")

    def validate(self) -> None:
        validate_options(self)
        self.resources()
        if self.rerank == "llm" and not self.llm:
            raise BadInputError("--rerank llm needs an LLM configuration", fix="pass --llm-config FILE (endpoint, model)")
        if self.llm:
            from codenib.engines.llm.client import LLMConfig

            # The budget may pick the LLM for any query: a key it could not send is refused now,
            # before the output folder or Ray, not as a folder of error rows.
            LLMConfig.from_dict(self.llm).check_key_route()
        if self.localise_weights:
            self.weights()

    def plan_options(self) -> PlanOptions:
        """The planning options, typed (their names were checked by `validate`)."""
        return PlanOptions(BUDGETS[self.budget], self.mode, self.rerank)

    def resources(self) -> dict[str, float]:
        """`actor_resources` parsed: {name: amount}.

        Raises:
            BadInputError: not NAME=AMOUNT pairs with positive amounts."""
        out: dict[str, float] = {}
        for item in (self.actor_resources or "").split(","):
            if not item.strip():
                continue
            name, sep, amount = item.partition("=")
            try:
                value = float(amount)
            except ValueError:
                value = -1.0
            if not sep or not name.strip() or value <= 0 or name.strip() in ("CPU", "GPU", "memory"):
                raise BadInputError(f"--actor-resources: {item.strip()!r} is not NAME=AMOUNT of a custom resource",
                                    fix="pass e.g. --actor-resources retrieval=1 (CPUs and GPUs are sized by the job)")
            out[name.strip()] = value
        return out

    def weights(self) -> tuple[tuple[str, float], ...] | None:
        """The localisation weights file's values, checked (None: the packaged weights)."""
        if not self.localise_weights:
            return None
        from codenib.model.weights import load_weights

        return tuple(sorted(load_weights(self.localise_weights).values.items()))

    def result_fields(self) -> dict[str, Any]:
        """The options that decide the rows written (resume requires them unchanged)."""
        out = {k: v for k, v in asdict(self).items()
               if k in ("budget", "mode", "k", "rerank", "llm", "shard_size", "run_tag", "device")}
        if self.localise_weights:
            # The weights' values decide the ranking, not the file's name.
            out["localise_weights"] = [list(kv) for kv in self.weights()]
        return out


@dataclass(frozen=True, kw_only=True)
class RerankOptions(JobOptions):
    """Every option of `codenib rerank` (a job spec's [rerank] section holds the same keys).
    `queries` and `index` default to those the source run recorded."""

    HELP: ClassVar[dict[str, dict[str, str]]] = {
        "queries": {"help": "the query set (default: the one the source run recorded)"},
        "out": {"metavar": "NEW_RESULTS_DIR", "help": "the new results folder (resumed when it holds this job)"},
        "index": {"help": "index for every query (default: the source run's)"},
        "index_root": {"help": "resolve the source run's index names under DIR"},
        "shard_size": {"help": "ranked lists per shard"},
        "workers": {"help": "rerank actors (default: one per CPU, at most 4)"},
        "run_tag": {"help": "the run_tag column (default: the source tag + '+RERANKER')"},
        "device": {"help": "the rerank actors' device"},
    }
    FLAGS: ClassVar[tuple[str, ...]] = ("results", "out", "reranker", "top_n", "queries", "index", "index_root",
                                        *JOB_FLAGS, "allow_partial", "progress")

    results: str = option(metavar="RESULTS_DIR", path=True, help="the earlier results folder (of `codenib run`)")
    reranker: str = option("embedding", choices=RERANKERS, help="the reranker")
    top_n: int = option(50, minimum=1,
                        help="candidates reranked per query; the rest keep their order")
    allow_partial: bool = option(False, help="accept a source run without _SUCCESS")

    def validate(self) -> None:
        validate_options(self)
        if self.reranker == "llm":
            if not self.llm:
                raise BadInputError("--reranker llm needs an LLM configuration", fix="pass --llm-config FILE")
            from codenib.engines.llm.client import LLMConfig

            LLMConfig.from_dict(self.llm).check_key_route()
        from codenib.core.storage import is_uri

        for name in ("results", "out", "queries", "index", "index_root"):
            if is_uri(getattr(self, name)):
                raise BadInputError(f"codenib rerank reads and writes local paths only; --{name.replace('_', '-')} "
                                    f"is {getattr(self, name)}",
                                    fix="copy the run to a local folder first (`codenib run` and `codenib eval` "
                                        "take object-storage URIs)")
        if self.index and self.index_root:
            raise BadInputError("give at most one of --index and --index-root",
                                fix="--index for one index, --index-root for the source run's index names")
