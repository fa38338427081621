"""Settings from flags, environment variables and a config file, in that order.

Every command-line option can also be set as ``LOCALAGENT_<FLAG>`` in the
environment (``--max-steps`` is ``LOCALAGENT_MAX_STEPS``) or in a TOML file
(``$LOCALAGENT_CONFIG``, else ``config.toml`` in the user config folder,
``$XDG_CONFIG_HOME/localagent`` on Linux):
top-level keys apply to every command that has the option, a ``[run]`` (or
``[models.pull]``) table to that command only. The result is click's
``default_map``, so a flag on the command line always wins. Commands and
options are read by duck typing: typer has moved from click to a vendored
copy of it, and both shapes work.

Values are checked here with the option's own type, so a bad setting is one
line naming where it came from, not a usage error about a flag nobody typed.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

import typer

from .errors import ConfigError
from .paths import folder

ENV_PREFIX = "LOCALAGENT_"
# Environment variables that are not option settings (so no flag may map onto one).
RESERVED_ENV = {"CONFIG", "TRACEBACK", "TRACES", "CACHE", "NO_HF", "PREFIX_CACHE"}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class Setting:
    """One resolved value and where it came from (``env LOCALAGENT_X`` or ``FILE [run]``)."""

    command: tuple[str, ...]
    option: str  # the long flag without dashes, e.g. max-steps
    param: str  # click's parameter name, the default_map key (``n_ctx`` for ``--ctx``)
    value: Any
    source: str


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the config file is looked for: ``$LOCALAGENT_CONFIG``, else ``config.toml`` in
    the user config folder (platformdirs: ``$XDG_CONFIG_HOME/localagent`` on Linux)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_PREFIX + "CONFIG"):
        return Path(env[ENV_PREFIX + "CONFIG"]).expanduser()
    return folder("config", "config.toml")


def read_file(path: Path, *, required: bool = False) -> dict[str, Any]:
    """The parsed TOML file, or {} when there is none (an error if ``required``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file {path} does not exist (from LOCALAGENT_CONFIG)") from None
        return {}
    except OSError as e:
        raise ConfigError(f"config file {path} cannot be read: {e.strerror or e}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}") from None


def flag_name(option: Any) -> str | None:
    """The long flag without its dashes (``max-steps``), or None for a short-only option."""
    longs = [o for o in option.opts if o.startswith("--")]
    return longs[0][2:] if longs else None


def env_name(flag: str) -> str:
    """``max-steps`` -> ``LOCALAGENT_MAX_STEPS``."""
    return ENV_PREFIX + flag.upper().replace("-", "_")


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    subcommands = getattr(cmd, "commands", None)
    if isinstance(subcommands, Mapping):
        for name, sub in subcommands.items():
            yield from _commands(sub, path + (name,))
    elif path:
        yield path, cmd


def _options(cmd: Any) -> Iterator[tuple[str, Any]]:
    for p in cmd.params:
        if getattr(p, "param_type_name", "") == "option" and not p.hidden and (flag := flag_name(p)) and flag != "help":
            yield flag, p


def _convert(cmd: Any, option: Any, raw: Any, where: str) -> Any:
    """``raw`` (a string from the environment, or a TOML value) as the option's type,
    checked by the option itself (its type, its range)."""
    if option.multiple:
        raw = raw.replace(",", " ").split() if isinstance(raw, str) else raw
        if not isinstance(raw, list):
            raise ConfigError(f"{where}: expected a list, got {raw!r}")
    elif option.is_flag:
        low = raw.strip().lower() if isinstance(raw, str) else raw
        if low not in _TRUE | _FALSE and not isinstance(low, bool):
            raise ConfigError(f"{where}: expected true or false, got {raw!r}")
        return low if isinstance(low, bool) else low in _TRUE
    try:
        return option.process_value(typer.Context(cmd), raw)
    except typer.BadParameter as e:
        raise ConfigError(f"{where}: {raw!r}: {e.message}") from None


def _section(data: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any]:
    node: Any = data
    for part in path:
        node = node.get(part, {}) if isinstance(node, Mapping) else {}
    return node if isinstance(node, Mapping) else {}


def resolve(
    root: Any,
    environ: Mapping[str, str] | None = None,
    file_data: Mapping[str, Any] | None = None,
    file_label: str = "config",
) -> list[Setting]:
    """Every setting the environment or the file gives, the environment winning."""
    env = os.environ if environ is None else environ
    data = file_data or {}
    commands = list(_commands(root))
    _check_keys(data, commands, file_label)
    out: list[Setting] = []
    for path, cmd in commands:
        section = _section(data, path)
        for flag, opt in _options(cmd):
            key = flag.replace("-", "_")
            if (name := env_name(flag)) in env:
                out.append(Setting(path, flag, opt.name or key, _convert(cmd, opt, env[name], name), f"env {name}"))
            elif key in section or flag in section:
                raw = section.get(key, section.get(flag))
                where = f"{file_label} [{'.'.join(path)}] {flag}"
                out.append(Setting(path, flag, opt.name or key, _convert(cmd, opt, raw, where), where))
            elif key in data or flag in data:
                raw = data.get(key, data.get(flag))
                where = f"{file_label} {flag}"
                out.append(Setting(path, flag, opt.name or key, _convert(cmd, opt, raw, where), where))
    return out


def _check_keys(data: Mapping[str, Any], commands: list[tuple[tuple[str, ...], Any]], label: str) -> None:
    """Unknown keys are an error: a misspelt setting silently ignored is worse than none."""
    flags = {f.replace("-", "_") for _, cmd in commands for f, _ in _options(cmd)}
    tables = {p[: i + 1] for p, _ in commands for i in range(len(p))}

    def walk(node: Mapping[str, Any], path: tuple[str, ...]) -> None:
        for key, value in node.items():
            sub = path + (key,)
            if sub in tables and isinstance(value, Mapping):
                walk(value, sub)
                continue
            k = key.replace("-", "_")
            cmd = dict(commands).get(path)
            known = {f.replace("-", "_") for f, _ in _options(cmd)} if cmd is not None else flags
            if k not in known:
                where = f"[{'.'.join(path)}] " if path else ""
                raise ConfigError(
                    f"{label}: unknown setting {where}{key!r}; settings are the long flags, e.g. "
                    + ", ".join(sorted(known)[:6])
                )

    walk(data, ())


def default_map(settings: list[Setting]) -> dict[str, Any]:
    """The nested ``default_map`` click reads (keyed by parameter name)."""
    out: dict[str, Any] = {}
    for s in settings:
        node = out
        for part in s.command:
            node = node.setdefault(part, {})
        node[s.param] = s.value
    return out


def load(root: Any, environ: Mapping[str, str] | None = None) -> tuple[list[Setting], Path]:
    """The settings for ``root``'s commands from the real environment and config file."""
    env = os.environ if environ is None else environ
    path = config_path(env)
    data = read_file(path, required=bool(env.get(ENV_PREFIX + "CONFIG")))
    return resolve(root, env, data, str(path)), path
