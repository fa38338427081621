"""``localagent`` as installed, with the model loader replaced by a scripted fake: the one
fake CLI of the tests.

For tests that drive the real command line (exit codes, signals, bad input) without a
model: ``python tests/fake_cli.py run TASK --root DIR ...``, or ``FAKE_CLI + [...]`` with
``fake_env(tmp_path, replies)`` from a test. ``FAKE_REPLIES`` (JSON) is the script, one
reply each:

- a string: the model's text;
- ``[tool, {arguments}]``: one call;
- ``{"text": ..., "finish": "stop"|"length"|"context"|"error", "forever": bool,
  "slow": seconds}``: ``forever`` repeats this reply for every later request; ``slow``
  streams the text one word at a time, that many seconds apart, after touching the file
  ``FAKE_STARTED``, so a test knows when the reply is under way (to send a signal).

The loader writes its keyword arguments to ``$LOADED`` (were progress bars asked for?) and
takes ``FAKE_SLEEP`` seconds (to press Ctrl-C while a model loads).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import localagent.backends as backends
from localagent.backends.base import Generation, GenerateOptions
from localagent.backends.fake import FakeBackend, call_text
from localagent.messages import Message


class ScriptedCli(FakeBackend):
    """The fake, with replies that repeat for ever or stream slowly."""

    def generate(self, messages: list[Message], tools: list[dict[str, Any]], options: GenerateOptions) -> Generation:
        spec = self.replies[0] if self.replies else None
        if not isinstance(spec, dict):
            return super().generate(messages, tools, options)
        if not spec.get("forever"):
            self.replies.popleft()
        if spec.get("slow"):
            Path(os.environ["FAKE_STARTED"]).touch()
            for word in spec["text"].split(" "):
                if options.on_text:
                    options.on_text(word + " ")
                time.sleep(spec["slow"])
            options = replace(options, on_text=None)  # shown already
        self.replies.appendleft(Generation(spec["text"], spec.get("finish", "stop"), error=spec.get("error")))
        return super().generate(messages, tools, options)


def script() -> list[Any]:
    out: list[Any] = []
    for r in json.loads(os.environ.get("FAKE_REPLIES", "[]")):
        if isinstance(r, list):
            r = call_text(r[0], **r[1])
        out.append(r)
    return out


FAKE_CLI = [sys.executable, str(Path(__file__).resolve())]


def fake_env(tmp_path: Path, replies: list[Any] | None = None, **extra: str) -> dict[str, str]:
    """The environment of a run of this CLI (or the real one): this process's without the user's
    config file and traceback setting, traces in ``tmp_path/traces``, the config folder
    ``tmp_path/xdg`` (empty), a plain terminal, the loader's arguments in ``tmp_path/loaded.json``, ``replies`` the script
    (a slow reply touches ``tmp_path/started``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALAGENT_CONFIG", "LOCALAGENT_TRACEBACK")}
    env.update(LOCALAGENT_TRACES=str(tmp_path / "traces"), XDG_CONFIG_HOME=str(tmp_path / "xdg"), TERM="dumb")
    env.update(FAKE_REPLIES=json.dumps(replies or []), LOADED=str(tmp_path / "loaded.json"))
    env["FAKE_STARTED"] = str(tmp_path / "started")
    env.update(extra)
    return env


def load(*args: Any, **kwargs: Any) -> ScriptedCli:
    """The model loader of this CLI: the scripted fake."""
    if "LOADED" in os.environ:
        loaded = Path(os.environ["LOADED"])
        loaded.parent.mkdir(parents=True, exist_ok=True)
        loaded.write_text(json.dumps(kwargs))
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    return ScriptedCli.scripted(script())


def main() -> None:
    backends.load_llama = load  # type: ignore[assignment]
    from localagent.cli import main as cli_main

    sys.argv[0] = "localagent"
    cli_main()


if __name__ == "__main__":
    main()
