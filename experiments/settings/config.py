"""Typed, validated configuration built from the sections of ``params.yaml``.

Each experiment declares its section as a pydantic model (``extra="forbid"``, so an unknown
key is an error), named in its stage's entry of :mod:`experiments.stages` (:data:`SECTIONS`). :func:`load` reads ``params.yaml``,
merges what a notebook passes over it, validates, and stops on bad input with a
:class:`ConfigError` naming the parameter, the value and what is allowed, before any work.

In a notebook::

    cfg = config.load(tfdata_read=tfdata_read, tiers=tiers)   # None means "as in params.yaml"
    cfg.tfdata_read.threads
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import PurePath
from types import SimpleNamespace
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from . import paths
from .. import stages

# Section name -> "module:Model", from the registry of stages (each stage's own sections, and
# the shared ones). Imported lazily so that reading the configuration of one stage never
# imports TensorFlow or PyTorch.
SECTIONS: dict[str, str] = stages.sections()


class ConfigError(ValueError):
    """Bad input: the message names the parameter, the value and what is allowed."""


class Section(BaseModel):
    """Base of every section model: unknown keys are errors, values are checked on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


def read_json_file(p, what: str, allowed: str) -> Any:
    """The JSON object in file ``p`` (a compute model, a checkpoint pattern, ...); a missing file
    or one that is not JSON stops with a ConfigError naming ``what``, the path and ``allowed``."""
    import json

    if not p.exists():
        raise ConfigError(f"{what} {p}: no such file; allowed: {allowed}")
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{what} {p}: not JSON ({e.msg} at line {e.lineno})") from None


def check_schema_file(obj: Any, where: str, schema: str, kind: str, workloads_hint: str) -> dict:
    """The ``workloads`` mapping of a schema file read by :func:`read_json_file` (a compute model,
    a checkpoint pattern); a ConfigError naming ``where`` when ``obj`` is not a ``kind`` file of
    ``schema`` (no ``workloads`` mapping: ``workloads_hint`` says what one maps to)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("workloads"), dict):
        raise ConfigError(f"{where}: not a {kind} file (schema {schema!r}): needs a "
                          f"'workloads' mapping of workload -> {workloads_hint}")
    if obj.get("schema", schema) != schema:
        raise ConfigError(f"{where}: schema = {obj.get('schema')!r}; allowed: {schema!r}")
    return obj["workloads"]


# Parameters renamed (issue 68: one word, "runs", for a run's count): an old key in a params.yaml
# stops with its new name rather than as an unknown parameter.
RENAMED = {"repeats": "runs", "max_repeats": "max_runs", "min_repeats": "min_runs",  # old word: new
           "train_seeds": "train_runs"}                                               # old word: new


def renamed(loc: str, value: Any) -> str:
    """The message for an old key at ``loc`` (``alexnet.repeats``: renamed) holding ``value``."""
    old = loc.rsplit(".", 1)[-1]
    return f"{loc} = {value!r}: renamed to {RENAMED[old]!r}; allowed: {loc[:-len(old)]}{RENAMED[old]} = {value!r}"


def old_keys(data: Any, prefix: str = "") -> list[str]:
    """:func:`renamed`'s message for every old key anywhere in ``data`` (a params mapping)."""
    out = []
    if isinstance(data, dict):
        for k, v in data.items():
            loc = f"{prefix}.{k}" if prefix else str(k)
            out += [renamed(loc, v)] if k in RENAMED else old_keys(v, loc)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += old_keys(v, f"{prefix}[{i}]")
    return out


def model_for(name: str) -> type[BaseModel]:
    if name not in SECTIONS:
        raise ConfigError(
            f"params: unknown section {name!r}; allowed sections: {', '.join(sorted(SECTIONS))}"
        )
    module, cls = SECTIONS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def read_params(path=None) -> dict[str, Any]:
    """The raw mapping in ``params.yaml`` (or ``path``); unknown top-level sections are errors."""
    path = paths.resolve(path) if path else paths.params_file()
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"params file {path} does not exist; run `make params` or pass a path") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping of section names to sections, got {type(data).__name__}")
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise ConfigError(
            f"{path.name}: unknown section(s) {', '.join(map(repr, unknown))}; "
            f"allowed sections: {', '.join(sorted(SECTIONS))}"
        )
    old = old_keys(data)   # any stage's load stops at an old key in any section: before any work
    if old:
        raise ConfigError(f"{path.name}: " + "; ".join(old))
    return data


def merge(base: Any, override: Any) -> Any:
    """``override`` laid over ``base``: mappings merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for k, v in override.items():
            out[k] = merge(base.get(k), v) if k in base else v
        return out
    return override


def _format_errors(name: str, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = name
        for part in e["loc"]:
            loc += f"[{part}]" if isinstance(part, int) else f".{part}"
        if e["type"] == "extra_forbidden" and e["loc"] and e["loc"][-1] in RENAMED:
            lines.append(renamed(loc, e["input"]))
        elif e["type"] == "extra_forbidden":
            allowed = sorted(model_for(name).model_fields) if "." not in loc[len(name):].lstrip(".") else []
            hint = f"unknown parameter; allowed: {', '.join(allowed)}" if allowed else "unknown parameter"
            lines.append(f"{loc} = {e['input']!r}: {hint}")
        else:
            lines.append(f"{loc} = {e.get('input')!r}: {e['msg']}")
    return "params: " + "; ".join(lines)


def validate(name: str, value: Any) -> Any:
    """Validate one section's raw value; returns the model (or the root value of a root model)."""
    model = model_for(name)
    try:
        obj = model.model_validate(value)
    except ValidationError as err:
        raise ConfigError(_format_errors(name, err)) from None
    return obj.root if hasattr(obj, "root") and not isinstance(obj, Section) else obj


_last_overrides: dict[str, Any] = {}


def differences(base: Any, value: Any, prefix: str) -> dict[str, Any]:
    """``{"section.key": value}`` for every leaf of ``value`` that differs from ``base``."""
    if isinstance(base, dict) and isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out |= differences(base.get(k), v, f"{prefix}.{k}")
        return out
    return {} if base == value else {prefix: value}


def last_overrides() -> dict[str, Any]:
    """What the last :func:`load` in this process changed from ``params.yaml``, as
    ``{"section.key": value}`` (empty when a notebook runs as the file says)."""
    return dict(_last_overrides)


def load(params_path=None, **overrides: Any) -> SimpleNamespace:
    """Validated sections named by the keyword arguments.

    A keyword's value is laid over that section of ``params.yaml``: ``None`` keeps the file's
    section, a mapping overrides the keys it names, anything else replaces the section.
    What differs from the file is remembered (:func:`last_overrides`): an exploring run's
    results folder is named after it.
    """
    raw = read_params(params_path)
    out, changed = {}, {}
    for name, override in overrides.items():
        model_for(name)  # unknown section name -> ConfigError
        if name not in raw and override is None:
            raise ConfigError(f"params: section {name!r} is missing from {paths.params_file().name}")
        value = raw.get(name) if override is None else merge(raw.get(name), override)
        out[name] = validate(name, value)
        changed |= differences(raw.get(name), value, name)
    _last_overrides.clear()
    _last_overrides.update(changed)
    return SimpleNamespace(**out)


def as_dict(ns: SimpleNamespace) -> dict[str, Any]:
    """Plain data for ``env.json``: the resolved parameters of a stage."""
    out = {}
    for k, v in vars(ns).items():
        if isinstance(v, BaseModel):
            out[k] = v.model_dump(mode="json")
        elif isinstance(v, list):
            out[k] = [x.model_dump(mode="json") if isinstance(x, BaseModel) else x for x in v]
        else:
            out[k] = v
    return out


# ----------------------------------------------------------------------------- command lines

class ArgumentParser(argparse.ArgumentParser):
    """``argparse`` whose errors are one line, ``error: MESSAGE`` on stderr, exit status 2 (no
    usage block): the same shape as every other bad input of the command lines."""

    def error(self, message):  # noqa: D102 - argparse's hook
        sys.stderr.write(f"error: {message} (--help lists the arguments)\n")
        raise SystemExit(2)


def _flag(parser: argparse.ArgumentParser | None, dest: str, values: dict) -> str:
    """The command-line spelling of ``dest`` (its long option, or the positional's name) in
    the subcommand ``values`` chose."""
    actions = list(getattr(parser, "_actions", []))
    for sp in [a for a in actions if isinstance(a, argparse._SubParsersAction)]:
        chosen = sp.choices.get(values.get(sp.dest))
        actions = (chosen._actions if chosen is not None else []) + actions
    for a in actions:
        if a.dest == dest:
            longs = [s for s in a.option_strings if s.startswith("--")]
            return (longs or a.option_strings or [dest])[0]
    return dest


def check_args(model: type[BaseModel], args: argparse.Namespace | dict,
               parser: argparse.ArgumentParser | None = None) -> BaseModel:
    """A command's arguments validated by ``model`` (a pydantic model whose fields are the
    arguments' ``dest`` names), the way :func:`validate` checks a ``params.yaml`` section; the
    first error becomes a :class:`ConfigError` naming the argument as typed (``--batch-size``),
    the value and what is allowed. Arguments the model does not name are not checked here."""
    values = vars(args) if isinstance(args, argparse.Namespace) else dict(args)
    try:
        return model.model_validate({k: v for k, v in values.items() if k in model.model_fields})
    except ValidationError as err:
        e = err.errors()[0]
        msg = e["msg"].removeprefix("Value error, ")
        if not e["loc"]:  # a check across arguments names them in its message
            raise ConfigError(msg) from None
        dest, value = str(e["loc"][0]), e.get("input")
        value = str(value) if isinstance(value, PurePath) else value
        raise ConfigError(f"{_flag(parser, dest, values)} = {value!r}: {msg}") from None


def matching(regex: str, allowed: str):
    """A string type for an argument model that must match ``regex`` whole; the error says
    ``allowed`` (a readable form, not the expression)."""
    import re

    from pydantic import AfterValidator

    def check(v: str) -> str:
        if not re.fullmatch(regex, v):
            raise ValueError(f"allowed: {allowed}")
        return v
    return Annotated[str, AfterValidator(check)]
