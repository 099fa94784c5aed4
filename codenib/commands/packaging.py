"""Packaging the working dir of a submitted job: the repository root, the excludes and the
runtime environment (cluster/runtime_env.yaml or [submit] runtime_env, overridden by [submit]).
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from codenib.commands.jobs import JobSpec
from codenib.core.errors import BadInputError, MissingDependencyError

# Never uploaded with the working_dir: environments, VCS data, run outputs, indexes, caches.
DEFAULT_EXCLUDES = (
    "/.venv", "/.git", "/runs", "/idx", "/codenib-demo", "/.codenib-demo", "/build", "/dist",
    "*.egg-info", "__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache",
)
ROOT_MARKERS = ("pyproject.toml", ".git")  # a folder holding one of these is a repository root
RUNTIME_ENV_FILE = "cluster/runtime_env.yaml"  # the team's runtime_env defaults, relative to the root
RUNTIME_ENV_KEYS = ("excludes", "env_vars", "pip")  # what a runtime_env YAML may set (the root is the working_dir)
LARGEST_FILES_SHOWN = 5  # named in the error when the upload is too large: enough to spot the culprit


def build_runtime_env(spec: JobSpec, root: Path) -> dict[str, Any]:
    """working_dir = the repository root, with excludes; env_vars and pip from the runtime_env
    YAML (cluster/runtime_env.yaml or [submit] runtime_env) overridden by [submit]."""
    table = spec.submit
    if table.get("runtime_env"):
        env_file: Path | None = root / str(table["runtime_env"])
        if not env_file.is_file():
            raise BadInputError(f"[submit] runtime_env names a missing file {table['runtime_env']!r}",
                                path=spec.path, fix=f"give a YAML file path relative to {root}")
    else:
        env_file = root / RUNTIME_ENV_FILE
        env_file = env_file if env_file.is_file() else None
    defaults = read_runtime_env_file(env_file) if env_file else {}
    excludes = list(DEFAULT_EXCLUDES)
    for extra in (defaults.get("excludes", []), table.get("excludes", [])):
        excludes += [e for e in extra if e not in excludes]
    env: dict[str, Any] = {"working_dir": str(root), "excludes": excludes}
    env_vars = {**defaults.get("env_vars", {}), **table.get("env_vars", {})}
    if env_vars:
        env["env_vars"] = env_vars
    pip = table.get("pip", defaults.get("pip"))
    if pip:
        env["pip"] = list(pip)
    return env


def read_runtime_env_file(path: Path) -> dict[str, Any]:
    """A runtime_env YAML (excludes, env_vars, pip), checked."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - PyYAML comes with ray
        raise MissingDependencyError("yaml", "pyyaml", f"reading {path}") from exc
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BadInputError(f"cannot parse the runtime_env YAML: {exc}", path=str(path),
                            fix="fix the YAML syntax at the position named") from exc
    if not isinstance(data, dict):
        raise BadInputError("a runtime_env YAML must be a mapping", path=str(path), fix="write `env_vars:` etc.")
    unknown = sorted(set(data) - set(RUNTIME_ENV_KEYS))
    if unknown:
        raise BadInputError(f"unknown key(s) {unknown}", path=str(path),
                            fix=f"valid keys: {', '.join(RUNTIME_ENV_KEYS)} (the working_dir is the repository root)")
    check_runtime_values(data, str(path))
    return data


def repository_root(spec_path: Path) -> Path:
    """The nearest folder above the spec holding pyproject.toml or .git; else the spec's folder."""
    folder = spec_path.resolve().parent
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in ROOT_MARKERS):
            return candidate
    return folder


def check_runtime_values(table: Mapping[str, Any], where: str) -> None:
    for key in ("excludes", "pip"):
        value = table.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise BadInputError(f"`{key}` must be a list of strings, got {value!r}", path=where,
                                fix=f'write {key} = ["..."]')
    env_vars = table.get("env_vars")
    if env_vars is not None:
        if not isinstance(env_vars, dict):
            raise BadInputError(f"`env_vars` must be a table of strings, got {env_vars!r}", path=where,
                                fix='write env_vars = { NAME = "value" }')
        bad = sorted(k for k, v in env_vars.items() if not isinstance(v, str))
        if bad:
            raise BadInputError(f"env_vars values must be strings; not so for {bad}", path=where,
                                fix='quote them: NAME = "1"')


def largest_files(root: Path, excludes: Sequence[str], n: int = LARGEST_FILES_SHOWN) -> str:
    """The `n` largest files under `root` that no exclude matches, for an upload-size error.

    Excludes are matched per path component with fnmatch, a close stand-in for the
    .gitignore patterns Ray applies; the list is a hint, not Ray's exact upload.
    """
    anchored = [e.strip("/") for e in excludes if e.startswith("/")]
    floating = [e.strip("/") for e in excludes if not e.startswith("/")]

    def excluded(rel: Path) -> bool:
        parts = rel.parts
        return (any(fnmatch.fnmatch("/".join(parts[:i + 1]), e) for e in anchored for i in range(len(parts)))
                or any(fnmatch.fnmatch(part, e) for e in floating for part in parts))

    sizes: list[tuple[int, str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath).relative_to(root)
        dirnames[:] = [d for d in dirnames if not excluded(here / d)]
        for name in filenames:
            rel = here / name
            if not excluded(rel):
                try:
                    sizes.append((os.lstat(root / rel).st_size, rel.as_posix()))
                except OSError:
                    continue
    biggest = sorted(sizes, key=lambda x: (-x[0], x[1]))[:n]
    return ", ".join(f"{rel} ({size / 2**20:.1f} MiB)" for size, rel in biggest) or "(none found)"
