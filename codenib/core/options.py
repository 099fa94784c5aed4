"""Options declared once: metadata on the fields of an options dataclass says each option's
help, flag, choices and lower bound. The command line (`codenib.commands.flags`), the job-spec
key and type checks (`codenib.commands.jobs`) and `validate_options` all read it.

Core level (standard library only).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import MISSING, Field
from typing import Any, Iterator

from codenib.core.errors import BadInputError

#: Where encoders run: auto picks CUDA when there is a GPU.
DEVICES = ("auto", "cpu", "cuda")


def option(default: Any = MISSING, *, help: str, flag: str | None = None, choices: tuple | None = None,
           metavar: str | None = None, minimum: int | None = None, label: str | None = None,
           fix: str | None = None, path: bool = False, alias: str | None = None, quiet: bool = False) -> Any:
    """A dataclass field with its option metadata.

    flag: the command-line flag (default --name-with-dashes); alias: the flag's and spec key's
    name when it gives a file to read into the field (llm_config -> llm); label: the word in
    errors (default the name); fix: the fix of a failed check; path: a path, kept as str;
    quiet: a boolean turned off by this flag (--quiet -> progress).
    """
    meta = {"help": help, "flag": flag, "choices": choices, "metavar": metavar, "minimum": minimum,
            "label": label, "fix": fix, "path": path, "alias": alias, "quiet": quiet}
    # `is`, not `in (None, False)`: 0 == False, and `minimum=0` would be dropped with the unset ones.
    kept = {k: v for k, v in meta.items() if v is not None and v is not False}
    return dataclasses.field(default=default, metadata=kept)


def required(cls: type, name: str) -> Any:
    """The option `name` of `cls`, redeclared without a default (a subclass requires it)."""
    return dataclasses.field(metadata=cls.__dataclass_fields__[name].metadata)


def option_fields(cls_or_options: Any) -> Iterator[Field]:
    """The fields that carry option metadata, in declaration order."""
    return (f for f in dataclasses.fields(cls_or_options) if "help" in f.metadata)


def flag_of(f: Field) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def validate_options(options: Any) -> None:
    """Check every option against its choices and lower bound (BadInputError, exit 2)."""
    for f in option_fields(options):
        value, meta = getattr(options, f.name), f.metadata
        problem = _out_of_range(f, value)
        if problem == "choices":
            raise BadInputError(f"unknown {meta.get('label', f.name)} {value!r}",
                                fix=meta.get("fix", f"use one of: {', '.join(meta['choices'])}"))
        if problem == "minimum":
            usual = (f"pass {flag_of(f)} {f.default}" if _usable_default(f)
                     else f"pass {flag_of(f)} {meta['minimum']} or more, or leave it out")
            raise BadInputError(f"{flag_of(f)} must be at least {meta['minimum']}, got {value}",
                                fix=meta.get("fix", usual))


def spec_keys(cls: type) -> tuple[str, ...]:
    """The keys a job-spec section may hold: every field, and the aliases (llm_config)."""
    fields = dataclasses.fields(cls)
    return tuple(f.name for f in fields) + tuple(f.metadata["alias"] for f in fields if "alias" in f.metadata)


def required_keys(cls: type) -> list[str]:
    """The fields without a default, in command-line order (`cls.FLAGS`)."""
    missing = {f.name for f in dataclasses.fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    return [name for name in getattr(cls, "FLAGS", ()) if name in missing]


def check_spec_section(cls: type, values: dict[str, Any], path: str, section: str,
                       overridden: frozenset[str] = frozenset()) -> None:
    """The values of a job spec's `[section]` checked as the command line checks its flags
    (type, choices, lower bound), each failure naming the spec file and the key; keys the
    command line `overridden` are left to its own checks.

    Raises:
        BadInputError: naming `path`, `[section] key` and a value to write instead.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in values.items():
        f = fields.get(key)
        if f is None or key in overridden:
            continue
        try:
            check_spec_values(cls, {key: value})
        except BadInputError as exc:
            raise BadInputError(f"[{section}] {exc}", path=path) from None
        problem = _out_of_range(f, value)
        if problem == "choices":
            choices = f.metadata["choices"]
            raise BadInputError(f"[{section}] {key} = {value!r} is not one of {', '.join(map(str, choices))}",
                                path=path, fix=f"write {key} = {json.dumps(choices[0])}")
        if problem == "minimum":
            least = f.metadata["minimum"]
            raise BadInputError(f"[{section}] {key} = {value} is below its least value, {least}", path=path,
                                fix=f"write {key} = {f.default if _usable_default(f) else least}")


def check_spec_values(cls: type, values: dict[str, Any]) -> None:
    """Type checks of values read from a job spec (TOML has no notion of our fields);
    path options become strings."""
    types = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in values.items():
        f = types.get(key)
        if f is None or value is None:
            continue
        if f.type in ("int", "int | None") and not isinstance(value, int):
            example = f.default if isinstance(f.default, int) else 1
            raise BadInputError(f"`{key}` must be an integer, got {value!r}", fix=f"write {key} = {example}")
        if f.type == "bool" and not isinstance(value, bool):
            raise BadInputError(f"`{key}` must be true or false, got {value!r}", fix=f"write {key} = true")
    for f in types.values():
        if f.metadata.get("path") and values.get(f.name) is not None:
            values[f.name] = str(values[f.name])


# --- helpers ---------------------------------------------------------------------------------

def _out_of_range(f: Field, value: Any) -> str | None:
    """"choices" or "minimum" when `value` (not None) breaks that check of `f`'s metadata."""
    if value is None:
        return None
    choices = f.metadata.get("choices")
    if choices is not None and value not in choices:
        return "choices"
    minimum = f.metadata.get("minimum")
    if minimum is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and value < minimum:
        return "minimum"
    return None


def _usable_default(f: Field) -> bool:
    """The field's default is a number that meets its own lower bound (so it can be offered as the fix)."""
    return isinstance(f.default, int) and not isinstance(f.default, bool) and f.default >= f.metadata["minimum"]
