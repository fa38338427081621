"""The agent loop, written once and shared by every front end.

Ask the model, append its turn, stop if it called no tool, otherwise run every
call, append one result per call, and ask again, until a stop condition says
otherwise. The history is the model's only memory.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from .backends.base import Backend, Generation
from .decoding import ask, decoding_options, first_token_threshold, first_turn, several_calls
from .dispatch import Dispatcher
from .errors import ConfigError, ConstraintError, ErrorKind, ToolErrorInfo
from .formats import CALL_CLOSE, CALL_OPEN, parse
from .constraint.grammar import Constraint, Engine, ToolChoice, build_constraint
from .history import fold
from .messages import Message, ToolCall, ToolResult, to_openai_messages
from . import policy
from .prompt import load_prompt
from .stops import Limits, Stop, StopReason, StopWatch
from .tools import Tool, ToolContext, ToolSet
from .validate import live_parameters
from .trace import RunEnd, RunStart, TraceStep, TraceWriter
from .tools.workspace import Workspace, WorkspaceError


@dataclass
class AgentConfig:
    """Everything that shapes a run besides the model and the tools."""

    limits: Limits = field(default_factory=Limits)
    max_tokens: int = 384  # per step
    temperature: float = 0.0
    seed: int | None = 0
    # The sampler chain above temperature 0, in llama.cpp's order: repetition penalty (over
    # the last 64 tokens), top-k, top-p, min-p, temperature. 0, 1, 0 and 1 turn each off.
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.0
    # Greedy prose drafted from the context (see GenerateOptions): off, measured slower on these
    # CPUs (0.41x and 0.71x tokens/s on answers that quote a result; evals/README.md, Speed).
    prompt_lookup: bool = False
    constrained: bool = True
    engine: Engine = "gbnf"  # or "llguidance"; see the README for the measured choice
    jump_forward: bool = True  # insert the tokens the constraint fixes without sampling
    tool_choice: str = "auto"
    # Several calls a turn, each next one only while a part of the request is unnamed: the task
    # suite's dev split was 148/152 with it and with one call (evals/README.md). None: several
    # where the backend takes that decision after each call (in-process), one through a server,
    # which samples the whole turn (the 135M model read one file four times there).
    parallel_calls: bool | None = None
    # With parallel calls, after each call: go on to another while fewer calls than the request
    # implies (policy.calls_implied) were made and the model's probability of another is at
    # least the first, or past that count when it is at least the second. None: greedy. That
    # probability told nothing on dev (0.98-0.9997 after every call, needed or not): the count decides.
    more_calls: tuple[float, float] | None = (0.0, 1.0)
    # ... and below that count, go on only while a part of the request names no call yet.
    parts_named: bool = True
    # ... and each next call is of the tool its part points to, or the last call's
    # (policy.next_tool): the model took the tools in the order offered.
    part_tools: bool = True
    # An optional text argument the request does not give is left out of the call
    # (policy.unasked): the 0.5B model labelled timers nobody asked to label.
    drop_unasked: bool = True
    # A value copied from the request wrong is copied again, an item of a list the request
    # gives nothing of is dropped, an empty optional list left out (policy.as_given): the
    # 0.5B model wrote "/data/raw" for "data/raw" and gave a contact a made-up home number.
    as_given: bool = True
    reason: bool = False
    max_result_tokens: int = 800
    context_limit: int | None = None  # fold above this many prompt tokens (default: the window)
    keep_recent_results: int = 2
    system_prompt: str | None = None
    final_answer_on_stop: bool = True  # one prose-only turn after max_steps / no progress
    # Call or prose is decided at the first token (see GenerateOptions); used
    # with tool_choice auto under the constraint, unless ``reason`` is on.
    call_threshold: float | None = 0.5
    # ... and at the first turn of a request that implies several calls (a list of cities, two
    # jobs; policy.calls_implied), this where lower: the model wrote long lists of look-ups
    # as made-up answers at a call mass of 0.14 to 0.49 (10 first turns of the project's seen
    # splits), while no first turn of those splits or of BFCL's dev cases that needed no call,
    # implied several and was left to the first token had one from 0.02 to 0.5. None: off.
    several_threshold: float | None = 0.1
    # ... but first, at the first turn: no tool fits the request (policy.no_tool_fits), so the
    # turn is prose. (PMI floor where the request shares no word with any tool, floor always):
    # a nat below the lowest fit of a dev call case, since a call case answered in prose is an
    # answer made up ("Yes, it is raining in Lisbon"; evals/README.md). None: off.
    relevance_floor: tuple[float, float] | None = (4.0, -2.0)
    # ... and where the best tool's fit reaches this, the turn is a call: a nat above the
    # highest fit of a dev no-call case (9.6), where the model's first token still chose prose
    # for a tool that plainly fits ("What is Intel (INTC) trading at?", fit 11.9). None: off.
    relevance_ceiling: float | None = 11.0
    # ... unless the model's first token all but rules a call out: above the ceiling, every
    # call case of the project's splits had a call mass of 0.11 or more, while BFCL's dev
    # requests no offered tool can answer ("How can I apply evolutionary algorithms in game
    # AI?" with evolve_creatures) had 0.005 or less.
    ceiling_threshold: float = 0.02
    # A first turn the model chose to write as prose that writes out a call of an offered tool
    # ("Below is a JSON object: {name: "get_stock_price", ...}"; policy.call_in_prose) is
    # asked again, as a call.
    retry_prose_calls: bool = True
    # ... and a first turn the model chose to call with a name the request does not say, the
    # answer itself ("Dublin" for the capital of Ireland; policy.answer_in_call), is asked
    # again, as prose.
    retry_answer_calls: bool = True
    # A turn that only repeats calls whose results are already in the history
    # is generated again as prose (the 0.5B model otherwise re-reads for ever).
    repeat_guard: bool = True
    # Name the top-level entries of the root in the system prompt, so that a
    # small model asks for paths that exist instead of inventing src/main.py.
    workspace_overview: bool = True
    # State-aware grammars: arguments that name live things (paths under the
    # root) are restricted by the grammar to the values that exist now. True for
    # every step, False never, "after_error" for a tool once a call to it failed
    # on a wrong path (the model first gets the error and its suggestion).
    live_grammar: bool | Literal["after_error"] = "after_error"
    # The first step must call a tool when the task names an existing file or
    # folder: the 0.5B model otherwise answers "what does notes.txt say" from
    # nothing about a third of the time (its call-or-prose mass is near 0.3).
    call_when_task_names_path: bool = True
    # After a repeat, and for the answer after a forced stop, write the answer from a
    # prompt holding only the task and the successful results (policy.answer_prompt),
    # not from the whole conversation with its errors and repeated calls.
    answer_from_evidence: bool = True
    # Read the files the task names, and that exist, before anything else (the next call
    # is a read_file of one of them), in the first half of the step limit.
    read_named_files: bool = True
    # An answer to a question holding numbers that no result holds is not taken, once:
    # the next step must call a tool.
    check_answers: bool = True
    # A repeat in a task that asks for a change, before any change: ask for the change
    # (a call of an irreversible tool) instead of an answer.
    change_on_repeat: bool = True
    # A task that only asks a question is offered no tool that writes a file.
    questions_read_only: bool = True
    # The answer from the evidence is written with no tool list in the prompt: shown the
    # tools, the 0.5B model answered with a call written as prose ("Find_files(media, '*.png')").
    evidence_without_tools: bool = True
    # A change task ends once its change is made (every file it asks to create exists, or
    # one change succeeded): the 0.5B model appended the same line until the step limit, or
    # undid a right edit with a second one.
    finish_after_change: bool = True
    # Once the change is made, a task that asks to be told nothing more is answered with
    # what was changed (policy.change_report), not by the model: it wrote "Yes, you can
    # change the log_level to debug." after making the edit, and took a second for it.
    report_changes: bool = True
    # A question about the folder that names no path starts with a search for one of its
    # own words ("What version does this project declare?" -> search "version").
    search_task_words: bool = True
    # A question that asks for something worked out (a sum, the larger number, a word
    # reversed) calls calculate once what it names is read, and answers from its result;
    # any other task may not call it (beside other tools).
    calculate_when_asked: bool = True
    # A question that counts the files of a type ("How many .png files are in images?"),
    # or names a file that is not there, calls find_files for them first: offered list_dir,
    # the 0.5B model counted every entry, or read another file and said the missing one exists.
    find_first: bool = True
    # An append task whose named files are all read appends next (no more looking): asked
    # to add a line to shopping.txt, the 0.5B model read it, then three other files.
    append_once_read: bool = True
    # A question whose named files are all read whole (nothing to work out) is answered
    # next, from the evidence (policy.answers_once_read). Off: faster on dev (0.80x seconds,
    # 92/96 vs 93/96), but a question whose read file asks for more (an injection test,
    # a repeat after a corrected path) is cut short; not yet measured apart.
    answer_once_read: bool = False
    # A which-file question is answered once a search found the word (policy.found_by_search);
    # any other question reads one of the few files a search found before it answers
    # (policy.hits_to_read).
    answer_after_find: bool = True
    # A question whose every part and path a call's result already answers is answered next
    # (policy.covered; a file read only where no tool of the user's is offered): after
    # get_weather(Budapest) for "the weather in Budapest", the 0.5B model called it again.
    answer_when_covered: bool = True
    read_search_hits: bool = True


@dataclass
class Usage:
    """Token accounting. ``sent`` grows with the square of the steps;
    ``evaluated`` only with what is new when the KV cache is reused."""

    prompt_tokens_sent: int = 0
    prompt_tokens_evaluated: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        """Tokens the model really processed: evaluated prompt plus generated."""
        return self.prompt_tokens_evaluated + self.completion_tokens

    def add(self, gen: Generation) -> None:
        self.prompt_tokens_sent += gen.prompt_tokens
        self.prompt_tokens_evaluated += gen.prompt_tokens_evaluated
        self.completion_tokens += gen.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens_sent": self.prompt_tokens_sent,
            "prompt_tokens_evaluated": self.prompt_tokens_evaluated,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total,
        }


@dataclass
class StepRecord:
    """What one step did; written to the trace as ``trace.TraceStep.of(record)``."""

    step: int
    generation: Generation
    calls: list[ToolCall]
    results: list[ToolResult]
    parse_errors: list[str]
    seconds: float


@dataclass
class RunResult:
    """The outcome of one run."""

    answer: str
    stop_reason: StopReason
    message: str
    steps: int
    usage: Usage
    trace: str | None
    history: list[Message]
    records: list[StepRecord]
    seconds: float

    @property
    def forced(self) -> bool:
        return self.stop_reason.forced

    def openai_messages(self) -> list[dict[str, Any]]:
        """The history as OpenAI chat messages (``tool_calls``, ``tool_call_id``)."""
        return to_openai_messages(self.history)

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "stop_reason": self.stop_reason.value,
            "message": self.message,
            "steps": self.steps,
            "usage": self.usage.to_dict(),
            "trace": self.trace,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Events:
    """Callbacks a front end can hook to show a run live."""

    on_text: Callable[[str], None] | None = None
    on_step_start: Callable[[int], None] | None = None
    on_call: Callable[[ToolCall], None] | None = None
    on_result: Callable[[ToolCall, ToolResult], None] | None = None
    on_notice: Callable[[str], None] | None = None


class Agent:
    """A model, a tool set and a config: ``run(task)`` drives the loop."""

    def __init__(
        self,
        backend: Backend,
        tools: list[Tool] | ToolSet,
        *,
        root: Path | str | Workspace | None = None,
        config: AgentConfig | None = None,
        approver: Callable[..., tuple[bool, str]] | None = None,
    ):
        self.backend = backend
        self.tools = tools if isinstance(tools, ToolSet) else ToolSet(tools)
        self.config = config or AgentConfig()
        if self.config.parallel_calls is None:
            self.config = replace(self.config, parallel_calls=backend.decides_each_call)
        self.workspace = root if isinstance(root, Workspace) or root is None else Workspace(root)
        self.ctx = ToolContext(workspace=self.workspace, state={})
        self.approver = approver
        self._choice = ToolChoice.parse(self.config.tool_choice)

    @classmethod
    def local(
        cls,
        root: Path | str = ".",
        *,
        model: str | None = None,
        backend: Backend | None = None,
        tools: Sequence[Tool] = (),
        yes: bool = False,
        config: AgentConfig | None = None,
    ) -> "Agent":
        """The agent ``localagent run`` builds, in one line: the built-in tools in ``root`` and
        ``tools``, the default system prompt (``assemble.default_config``), writes and commands
        asked for on the terminal (all approved with ``yes``), on ``backend`` or else ``model``
        (an id or a .gguf path; None: the default) loaded in-process."""
        from .assemble import assemble, workspace_setup
        from .backends import load_llama

        setup = workspace_setup(root, tools=tools, yes=yes)  # a bad root or tool is said before the model loads
        return assemble(backend or load_llama(model), setup, config)

    def worst_case_tokens(self) -> int:
        """The most a run can cost before it starts: steps x context window."""
        return self.config.limits.max_steps * self.backend.context_size

    def check_budget(self, task: str) -> None:
        """Raise ConfigError when the token budget cannot cover even the first prompt
        (instructions, tool list, task): the run could do nothing but stop."""
        budget = self.config.limits.token_budget
        if budget is None:
            return
        msgs = [Message("system", s)] if (s := self._system_prompt()) else []
        first = self.backend.prompt_tokens(msgs + [Message("user", self._first_turn(task))], self.tools.schemas())
        if budget <= first:
            raise ConfigError(
                f"token budget {budget} cannot cover even the first prompt ({first} tokens: instructions, "
                f"{len(self.tools)} tools and the task); give at least {first + self.config.max_tokens} "
                f"(the first prompt and one reply of up to {self.config.max_tokens} tokens)"
            )

    def _grammar(
        self,
        schemas: list[dict[str, Any]],
        choice: ToolChoice,
        path_failed: set[str] | None = None,
        *,
        only: Literal["changes", "looks"] | None = None,
        task: str = "",
        reads: list[str] | None = None,
        read: set[str] | None = None,
        terms: list[str] | None = None,
        expressions: list[str] | None = None,
        finds: tuple[list[str], list[str]] | None = None,
    ) -> Constraint | None:
        """The step's constraint; ``only``: a call of an irreversible tool, or of a
        read-only one; ``task``: writes narrowed to the paths it allows (policy.write_targets);
        ``reads``: the read must be of one of these; ``read``: the files read so far."""
        if not self.config.constrained:
            return None
        live = self.config.live_grammar
        if live:
            schemas = [
                {"type": "function", "function": {**s["function"], "parameters": live_parameters(t, self.ctx)}}
                if live is True or t.name in (path_failed or ())
                else s
                for t, s in zip(self.tools, schemas)
            ]
        tools = list(self.tools)
        if (targets := policy.write_targets(task, self.workspace)) is not None:
            # A file to create comes first (a copy edited its source); then the files named.
            new = policy.to_create(task, self.workspace, targets=targets)
            targets = new or targets
            pairs = [(t, self._narrow_write(t, s, targets, read or set(), task, bool(new)) if t.irreversible else s) for t, s in zip(tools, schemas)]
            tools, schemas = [t for t, s in pairs if s is not None], [s for _, s in pairs if s is not None]
        if self.config.calculate_when_asked and not policy.computes(task) and len(tools) > 1:
            # Shown calculate for "write a story", the 0.5B model called it with a runaway number.
            kept = [(t, s) for t, s in zip(tools, schemas) if t.name != "calculate"]
            tools, schemas = [t for t, _ in kept], [s for _, s in kept]
        if self.config.questions_read_only and policy.asks_only(task):
            kept = [(t, s) for t, s in zip(tools, schemas) if not policy.writes_files(t)]
            tools, schemas = [t for t, _ in kept], [s for _, s in kept]
        if only is not None:
            schemas = [s for t, s in zip(tools, schemas) if t.irreversible == (only == "changes")]
        if reads:
            # The whole file, from its start: offered offset and length, the 1.5B model read
            # one line at a time, then past the end until the no-progress stop.
            schemas = [_only_path(_narrow_path(s, reads)) if t.name == "read_file" else s for t, s in zip(tools, schemas)]
        if terms:
            schemas = [_pattern_only(s, terms) if t.name == "search" else s for t, s in zip(tools, schemas)]
        if expressions:
            schemas = [_with_enum(s, "expression", expressions) if t.name == "calculate" else s for t, s in zip(tools, schemas)]
        if finds:
            schemas = [_with_enum(_narrow_path(s, finds[1]), "pattern", finds[0]) if t.name == "find_files" else s for t, s in zip(tools, schemas)]
        return build_constraint(
            schemas,
            choice,
            engine=self.config.engine,
            parallel=self._several(task),
            reason=self.config.reason,
        )

    def _several(self, task: str) -> bool:
        """Whether a turn may hold several calls. A change is one a turn: the 0.5B model made a
        right edit, then appended the same line in the same turn (a change is checked after it)."""
        return several_calls(self.config) and not policy.wants_change(task)

    def _narrow_write(self, t: Tool, schema: dict[str, Any], targets: list[str], read: set[str], task: str, creates: bool = False) -> dict[str, Any] | None:
        """A write tool's schema with its path one of ``targets`` (None: the tool can take
        none of them, e.g. an edit when the file is still to be created); an append when
        the task asks for one; text it must copy from that file (edit_file's old) narrowed
        to the file's pieces the task names once it was read; a content the task gives."""
        live = live_parameters(t, self.ctx)["properties"].get("path", {}).get("enum")
        paths = [p for p in targets if live is None or p in live]
        if not paths:
            return None
        schema = _narrow_path(schema, paths)
        props = schema["function"]["parameters"].get("properties", {})
        if t.name == "write_file" and "edit_file" in self.tools.names() and policy.replaces_words(task) and set(paths) <= read:
            return None  # the file is there and read: the words are replaced by edit_file
        if policy.appends(task):
            if "append" not in props:
                return None
            schema = _with_enum(schema, "append", [True], required=True)
        named = set(self._named(task)) if read - set(paths) else set()  # one walk, not one per file read
        sources = [text for p in read if p not in paths and p in named and (text := self._text(p)) is not None]
        if "content" in props and (choices := policy.content_choices(task, sources, creates)):
            schema = _with_enum(schema, "content", choices)
        arg, path_arg = policy.COPIED_TEXT.get(t.name, ("", ""))
        if len(paths) == 1 and paths[0] in read and arg in props and path_arg in props:
            text = self._text(paths[0])
            if text is not None and (pieces := policy.spans(text, path=paths[0])):
                if "new" in props and (word := policy.new_word(task)) is not None:
                    pieces = policy.word_spans(pieces)
                    schema = _with_enum(schema, "new", [word])
                schema = _with_enum(schema, arg, policy.named_spans(task, pieces))
        if "all" in props and policy.edits_every(task):
            schema = _with_enum(schema, "all", [True], required=True)
        return schema

    def _text(self, rel: str) -> str | None:
        """A workspace file's text, or None."""
        if self.workspace is None:
            return None
        try:
            return (self.workspace.root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def _named(self, task: str) -> list[str]:
        return self.workspace.mentioned(task) if self.workspace is not None else []

    def _is_path(self, value: str) -> bool:
        """Whether ``value`` is a path of the folder (a value held to the request keeps it)."""
        if self.workspace is None:
            return False
        try:
            self.workspace.resolve(value)
        except (WorkspaceError, OSError, ValueError):
            return False
        return True

    def _system_prompt(self) -> str:
        return (self.config.system_prompt or "").strip()

    def _first_turn(self, task: str) -> str:
        """The task as the first user turn, after the workspace overview. The overview is
        kept out of the system turn so that the system turn (instructions and tools, the
        bulk of the prompt) is the same in every folder and its KV state can be reused."""
        # Only for a task about the workspace: before "Write a long story" it made the model refuse.
        about = policy.must_look(task, self.workspace)
        if self.config.workspace_overview and self.workspace is not None and about and (o := overview(self.workspace.root)):
            return f"{o}\n\n{task}"
        return task

    def _threshold(self, first: str | None = None) -> float | None:
        return first_token_threshold(self.config, self._choice, first)

    def run(
        self,
        task: str,
        *,
        trace: Path | str | None = None,
        events: Events | None = None,
        history: list[Message] | None = None,
    ) -> RunResult:
        """Run ``task`` to a stop; never raises for model or tool failures.

        ``history`` continues an earlier conversation (chat); the task is
        appended as a new user turn.
        """
        s = self._start(task, history, trace, events or Events())
        try:
            while s.stop is None:
                self._step(s)
        except KeyboardInterrupt:
            s.stop = Stop(StopReason.INTERRUPTED, "interrupted")
            f = s.inflight
            if f is not None and f.step == s.step and not any(r.step == s.step for r in s.records):
                # Keep what the step had produced: the text so far, and an answer for every call made.
                s.answer = self._record_interrupted(s.writer, s.records, f) or s.answer
        if s.stop.reason.forced:
            s.answer = self._forced_answer(s)
        return self._finish(s)

    def _start(self, task: str, history: list[Message] | None, trace: Path | str | None, ev: Events) -> "RunState":
        msgs: list[Message] = list(history or [])
        if not msgs and (system := self._system_prompt()):
            msgs.append(Message("system", system))
        msgs.append(Message("user", task if history else self._first_turn(task)))
        cfg = self.config
        dispatcher = Dispatcher(
            self.tools, self.ctx, max_result_tokens=cfg.max_result_tokens,
            count_tokens=self.backend.count_tokens, approver=self.approver,
        )
        s = RunState(task, msgs, self.tools.schemas(), ev, TraceWriter(trace), StopWatch(cfg.limits), dispatcher)
        s.to_create = policy.to_create(task, self.workspace)
        s.writer.write(
            RunStart(
                task=task,
                model=self.backend.name,
                tools=self.tools.names(),
                config=_config_dict(cfg),
                worst_case_tokens=self.worst_case_tokens(),
            )
        )
        return s

    def _step(self, s: "RunState") -> None:
        """One step: ask the model, then answer or run its calls. Sets ``s.stop`` to end."""
        if stop := s.watch.before_step(s.step + 1, s.usage.total):
            s.stop = stop
            return
        fitted, s.stop = self._fit(s.msgs, s.schemas)
        if fitted is not s.msgs:  # old results folded: the prompt changes before its end
            s.msgs, s.reused_before = fitted, 0
        if s.stop:
            return
        t0 = time.monotonic()
        if self._change_done(s) or self._calculated(s) or self._read_enough(s) or self._found(s) or self._covered(s):
            self._answer_now(s, t0)
            return
        turn = self._turn_choice(s)
        msgs = s.msgs
        if turn.no_tool and (worked := policy.worked_out_prompt(s.task)):
            msgs = _system_turn(s.msgs) + [Message("user", worked)]  # the value worked out, not guessed
        # Shown the tools with none allowed, the 0.5B model wrote "Here is the JSON response for read_file".
        gen = self._ask(s, msgs, turn, t0, tools_shown=not turn.no_tool or self._tools_in_answer())
        if gen is None:
            return
        calls, errors, content = self._calls(gen, s.step)
        calls = [self._resent(s, c) for c in calls]
        redone = self._first_turn_again(s, turn, msgs, (gen, calls, errors, content), t0)
        if redone is None:
            return
        gen, calls, errors, content = redone
        repeat = self._repeat(s, calls) if calls and not errors else policy.Repeat.NONE
        if not calls and not errors and self._echo(s, content):
            repeat = policy.Repeat.ANSWER  # it wrote the task back instead of an answer
        if repeat is not policy.Repeat.NONE:
            redone = self._after_repeat(s, repeat, gen, calls, t0)
            if redone is None:
                return
            gen, calls, errors, content = redone
        if not calls and not errors and self._made_up(s, content):
            # An answer holding numbers nothing found holds: not taken; the next step looks again.
            gen.unsupported_answer = content[:200]
            s.checked_answer, s.retry_offered = True, True
            self._record(s.writer, s.records, s.step, gen, [], [], [], t0)
            return
        if not calls and not errors and self._change_not_made(s):
            # The task asked for a change and none was made: the answer is not taken, once.
            gen.change_not_made = content[:200]
            s.checked_change = True
            s.msgs.append(Message("user", load_prompt("repeat_change").strip().format(task=s.task)))
            self._record(s.writer, s.records, s.step, gen, [], [], [], t0)
            return
        if not calls and not errors and self.config.answer_from_evidence:
            content = policy.finished_answer(content, s.task, s.msgs)
        s.msgs.append(Message("assistant", content, tool_calls=calls, raw=gen.text))
        if not calls and not errors:
            s.answer = content
            s.stop = Stop(StopReason.ANSWERED, "the model answered")
            self._record(s.writer, s.records, s.step, gen, [], [], [], t0)
            return
        self._run_calls(s, gen, calls, errors, content, t0)

    def _turn_choice(self, s: "RunState") -> "Turn":
        """What the step may produce: the tool choice, the call-or-prose threshold, which
        tools (changes or looks only), the files it must read, the words it must search,
        the expressions it may calculate."""
        choice, threshold = self._choice, self._threshold(s.task if s.step == 0 else None)
        only: Literal["changes", "looks"] | None = None
        reads = self._next_reads(s, choice)
        finds = self._finds(s, choice)
        terms = [] if finds else self._search_terms(s, choice)  # a name to find is more than a word
        if terms:
            choice, threshold = ToolChoice("required", "search"), None
        if finds:
            choice, threshold = ToolChoice("required", "find_files"), None
        if reads:
            choice, threshold = ToolChoice("required", "read_file"), None
        if s.retry_offered and choice.mode == "auto" and self.config.constrained:
            choice, threshold = ToolChoice("required"), None  # an error offered the corrected call: no answer yet
        if (s.checked_change and not s.changes and s.msgs[-1].role == "user") or self._changes_now(s, reads):
            choice, threshold, only = ToolChoice("required"), None, "changes"  # the change it was asked for
        if s.step == 0 and self._must_look(s.task, choice):
            choice, threshold = ToolChoice("required"), None  # look before answering
            if policy.look_before_change(s.task, self.workspace) and any(not t.irreversible for t in self.tools):
                only = "looks"  # and before changing what exists: a copy blind of its source went wrong
            elif policy.writes_first(s.task, self.workspace) and any(t.irreversible for t in self.tools):
                only = "changes"
        if not reads and not terms and self._calculates(s):
            choice = ToolChoice("required", "calculate")
            return Turn(choice, None, only, expressions=policy.expressions(s.task, s.msgs))
        kind, relevance = first_turn(self.backend, s.task, s.schemas, self.config) if s.step == 0 and threshold is not None else (None, None)
        if kind == "prose":  # the request answers itself, or no offered tool does what it asks
            return Turn(ToolChoice("none"), None, relevance=relevance, no_tool=True)
        if kind == "call":  # a tool clearly fits: a call, unless the first token all but rules it out
            threshold = self.config.ceiling_threshold  # (the same grammar: "required" would change the values a little)
        return Turn(choice, threshold, only, reads, terms, finds=finds, relevance=relevance)

    def _ask(self, s: "RunState", msgs: list[Message], turn: "Turn", t0: float, *, tools_shown: bool = True) -> Generation | None:
        """Generate the step's turn (a new step); None when the step ended the run.
        ``tools_shown``: False renders the prompt without the tool list (a prose answer)."""
        try:
            grammar = self._grammar(
                s.schemas, turn.choice, s.path_failed, only=turn.only, task=s.task, reads=turn.reads, read=s.read,
                terms=turn.terms, expressions=turn.expressions, finds=turn.finds,
            )
        except ConstraintError as e:
            s.stop = Stop(StopReason.CONSTRAINT_ERROR, str(e))
            return None
        s.step += 1  # only steps that reach the model count
        if s.ev.on_step_start:
            s.ev.on_step_start(s.step)
        s.inflight = _InFlight(s.step, t0)
        gen = self._generate(msgs, s.schemas if tools_shown else [], grammar, s.ev, turn.threshold, s.inflight.streamed, turn.choice, s.task)
        gen.relevance = turn.relevance
        s.usage.add(gen)
        s.reused_before = self._check_reuse(gen, s.reused_before) if tools_shown else 0
        return self._unless_failed(s, gen, t0)

    def _unless_failed(self, s: "RunState", gen: Generation, t0: float) -> Generation | None:
        if stop := _failure(gen):
            s.stop = stop
            self._record(s.writer, s.records, s.step, gen, [], [], [], t0)
            if stop.reason is StopReason.BACKEND_ERROR:
                s.answer = _partial_prose(gen.text) or s.answer  # a server that died mid-answer
            return None
        return gen

    def _after_repeat(
        self, s: "RunState", repeat: policy.Repeat, first: Generation, calls: list[ToolCall], t0: float
    ) -> tuple[Generation, list[ToolCall], list[str], str] | None:
        """The turn generated again after one that only repeated earlier calls (or answered
        by echoing the task): an answer written from the evidence, or (a task asking for a
        change, none made yet) a call that makes it. Every generation is paid for; the step
        record shows the sum."""
        if repeat is policy.Repeat.CHANGE:
            nudge = Message("user", load_prompt("repeat_change").strip().format(task=s.task))
            s.msgs.append(nudge)
            self._notice(s, "repeat of a read: asked for the change instead")
            return self._regenerate(s, s.msgs, ToolChoice("required"), first, calls, t0, only="changes")
        if self.config.answer_from_evidence:
            self._notice(s, "repeat of an earlier call: the answer is written from the results")
            turn = self._regenerate(s, self._evidence_msgs(s), ToolChoice("none"), first, calls, t0, tools_shown=self._tools_in_answer())
            if turn is None or not policy.echoes_task(turn[3], s.task):
                return turn
            first = turn[0]  # it wrote the task back: ask once more, in the conversation
        nudge = Message("user", load_prompt("repeat_guard").strip().format(task=s.task))
        s.msgs.append(nudge)
        self._notice(s, "repeat of an earlier call: asked for an answer instead")
        turn = self._regenerate(s, s.msgs, ToolChoice("none"), first, calls, t0)
        if turn is not None and not turn[1] and policy.echoes_task(turn[3], s.task):
            return (*turn[:3], policy.what_was_found(s.msgs))  # twice the task written back: the findings
        return turn

    def _notice(self, s: "RunState", text: str) -> None:
        if s.ev.on_notice:
            s.ev.on_notice(text)

    def _regenerate(
        self,
        s: "RunState",
        msgs: list[Message],
        choice: ToolChoice,
        first: Generation,
        calls: list[ToolCall],
        t0: float,
        *,
        only: Literal["changes"] | None = None,
        tools_shown: bool = True,
        threshold: float | None = None,
    ) -> tuple[Generation, list[ToolCall], list[str], str] | None:
        """The step's turn generated again from ``msgs``, its cost added to ``first``'s."""
        try:
            grammar = self._grammar(s.schemas, choice, s.path_failed, only=only, task=s.task, read=s.read)
        except ConstraintError as e:
            s.stop = Stop(StopReason.CONSTRAINT_ERROR, str(e))
            return None
        assert s.inflight is not None
        s.inflight.streamed.clear()  # an interrupt now keeps the answer, not the repeat
        retry = self._generate(msgs, s.schemas if tools_shown else [], grammar, s.ev, threshold, s.inflight.streamed, choice, s.task)
        s.usage.add(retry)
        retry.repeat_guard = first.repeat_guard or [c.canonical() for c in calls] or None  # none: not a repeat
        retry.pay_for(first)  # the discarded turn took model time too
        if self._unless_failed(s, retry, t0) is None:
            return None
        return (retry, *self._calls(retry, s.step))

    def _run_calls(
        self, s: "RunState", gen: Generation, calls: list[ToolCall], errors: list[str], content: str, t0: float
    ) -> None:
        """Run the turn's calls, append one result per call, and check the stops."""
        assert s.inflight is not None
        s.inflight.gen, s.inflight.calls, s.inflight.content = gen, calls, content
        for c in calls:
            if s.ev.on_call:
                s.ev.on_call(c)
        results = s.inflight.results = s.dispatcher.run(calls)
        results += [_format_error(s.step, i, e, gen) for i, e in enumerate(errors)]
        s.retry_offered = False
        for c, r in zip(calls, results):
            if s.ev.on_result:
                s.ev.on_result(c, r)
            self._note(s, c, r)
        for r in results:
            s.msgs.append(Message("tool", r.content, tool_call_id=r.call_id, name=r.name))
        self._record(s.writer, s.records, s.step, gen, calls, results, errors, t0)
        s.inflight = None
        if content:
            s.answer = content
        s.stop = s.watch.after_results(calls, results)
        if s.stop is None and s.dispatcher.retry_exhausted:
            s.stop = Stop(StopReason.RETRY_LIMIT, "retry limit reached for a tool")

    def _note(self, s: "RunState", c: ToolCall, r: ToolResult) -> None:
        """What a result tells the repeat check: what is known, corrected, changed."""
        key = c.canonical()
        if r.is_error:
            s.answered.discard(key)
            if r.error is not None and r.error.retry is not None:
                s.corrected[key] = ToolCall("", **r.error.retry).canonical()
                s.retries[key] = r.error.retry
                s.retry_offered = s.corrected[key] not in s.answered and policy.means_the_same(r.error.kind, c.arguments, r.error.retry.get("arguments", {}))
            elif r.error is not None and r.error.kind in _FINAL_ERRORS:
                s.failed.add(key)  # the same call can only fail the same way again
            if r.error is not None and r.error.kind in policy.PATH_ERRORS:
                s.path_failed.add(c.name)
        elif (t := self.tools.get(c.name)) is not None and t.irreversible:
            s.answered.clear()  # the world changed: earlier results may be stale
            s.whole.clear()
            s.changes.add(key)  # the same change again asks for nothing new
            if isinstance(path := c.arguments.get("path"), str):
                s.changed.add(path)
        else:
            s.answered.add(key)
            if c.name == "read_file" and isinstance(path := c.arguments.get("path"), str):
                s.read.add(path)
                if policy.read_whole(c.arguments, r.content):
                    s.whole.add(path)

    def _finish(self, s: "RunState") -> RunResult:
        assert s.stop is not None
        result = RunResult(
            answer=s.answer,
            stop_reason=s.stop.reason,
            message=s.stop.message,
            steps=s.step,
            usage=s.usage,
            trace=str(s.writer.path) if s.writer.path else None,
            history=s.msgs,
            records=s.records,
            seconds=time.monotonic() - s.started,
        )
        s.writer.write(RunEnd(**result.to_dict()))
        s.writer.close()
        return result

    def _generate(
        self,
        msgs: list[Message],
        schemas: list[dict[str, Any]],
        constraint: Constraint | None,
        ev: Events,
        threshold: float | None,
        streamed: list[str] | None = None,
        choice: ToolChoice | None = None,
        task: str = "",
    ) -> Generation:
        on_text = ev.on_text
        if streamed is not None:
            shown = ev.on_text

            def on_text(piece: str) -> None:
                streamed.append(piece)
                if shown:
                    shown(piece)

        plan = policy.call_plan(task, msgs, schemas)
        options = decoding_options(self.config, constraint, threshold=threshold, choice=choice, on_text=on_text, plan=plan, request=task)
        return ask(self.backend, msgs, schemas, options, task, self.config, self._is_path)

    def _check_reuse(self, gen: Generation, previous: int) -> int:
        """Note in ``gen.info`` when the KV cache kept less than the previous prompt,
        though the history only grew since: the chat template rendered earlier turns
        differently (a date, a counter, reasoning dropped from old turns), which silently
        turns reuse into re-evaluation. Returns this prompt's length, for the next step."""
        if not self.backend.reuses_kv_cache or gen.finish_reason == "error":
            return 0
        lost = previous - gen.prompt_tokens_reused
        if previous and lost > 0:
            gen.kv_reuse_lost = lost
        return gen.prompt_tokens

    def _evidence_msgs(self, s: "RunState") -> list[Message]:
        """The prompt an answer is written from: the system turn, then the question and the
        evidence alone (policy.answer_prompt)."""
        return _system_turn(s.msgs) + [Message("user", policy.answer_prompt(s.task, s.msgs))]

    def _tools_in_answer(self) -> bool:
        return not self.config.evidence_without_tools

    def _change_done(self, s: "RunState") -> bool:
        cfg = self.config
        if not (cfg.finish_after_change and cfg.constrained and self._choice.mode == "auto"):
            return False
        return policy.change_done(s.task, s.changed, s.to_create)

    def _changes_now(self, s: "RunState", reads: list[str]) -> bool:
        """Whether the step must make the change (policy.ready_to_append): no change made
        yet, and nothing left to read first."""
        cfg = self.config
        if not (cfg.append_once_read and cfg.constrained and self._choice.mode == "auto") or reads or s.changes or not s.step:
            return False
        return policy.ready_to_append(s.task, self.workspace, s.read)

    def _read_enough(self, s: "RunState") -> bool:
        cfg = self.config
        if not (cfg.answer_once_read and cfg.constrained and self._choice.mode == "auto"):
            return False
        return policy.answers_once_read(s.task, self.workspace, s.whole, self.tools.names())

    def _covered(self, s: "RunState") -> bool:
        cfg = self.config
        return cfg.answer_when_covered and cfg.constrained and self._choice.mode == "auto" and policy.covered(s.task, s.msgs, self.tools.names())

    def _found(self, s: "RunState") -> bool:
        cfg = self.config
        return cfg.answer_after_find and cfg.constrained and self._choice.mode == "auto" and policy.found_by_search(s.task, s.msgs)

    def _call_in_prose(self, s: "RunState", turn: "Turn", content: str) -> bool:
        """Whether the run's first turn, prose by the model's own choice, writes out a call
        of an offered tool (``AgentConfig.retry_prose_calls``)."""
        cfg = self.config
        chosen = turn.choice.mode == "auto" and not turn.no_tool and cfg.constrained
        return cfg.retry_prose_calls and chosen and s.step == 1 and policy.call_in_prose(content, self.tools.names())

    def _first_turn_again(
        self, s: "RunState", turn: "Turn", msgs: list[Message], done: tuple[Generation, list[ToolCall], list[str], str], t0: float
    ) -> tuple[Generation, list[ToolCall], list[str], str] | None:
        """The run's first turn, asked again where its kind was wrong: prose that writes out a
        call, as a call; a call that holds the answer, as prose. None when the step ended the run."""
        gen, calls, errors, content = done
        if not calls and not errors and self._call_in_prose(s, turn, content):
            self._notice(s, "the first turn wrote a call as prose: asked again, as a call")
            redone = self._regenerate(s, msgs, turn.choice, gen, [], t0, threshold=0.0)  # a call, same grammar
            if redone is None:
                return None
            gen, calls, errors, content = redone
        if calls and not errors and self._answer_in_call(s, turn, calls):
            self._notice(s, "the first turn's call holds a name the task does not say, the answer: asked again, as prose")
            return self._regenerate(s, msgs, ToolChoice("none"), gen, [], t0, tools_shown=self._tools_in_answer())
        return gen, calls, errors, content

    def _answer_in_call(self, s: "RunState", turn: "Turn", calls: list[ToolCall]) -> bool:
        """Whether the run's first turn, a call by the model's own choice, holds the answer in
        a name the task does not say (``AgentConfig.retry_answer_calls``)."""
        cfg = self.config
        chosen = turn.choice.mode == "auto" and not turn.no_tool and cfg.constrained
        return cfg.retry_answer_calls and chosen and s.step == 1 and policy.answer_in_call(s.task, [(c.name, c.arguments) for c in calls], self.tools.schemas(), self._is_path)

    def _calculates(self, s: "RunState") -> bool:
        """Whether the step must call calculate: the question asks for something worked out
        and no calculation succeeded yet (two tries)."""
        cfg = self.config
        if not (cfg.calculate_when_asked and cfg.constrained and self._choice.mode == "auto") or "calculate" not in self.tools.names():
            return False
        tries = sum(c.name == "calculate" for m in s.msgs if m.role == "assistant" for c in m.tool_calls)
        return tries < 2 and not self._calculated(s) and policy.computes(s.task)

    def _calculated(self, s: "RunState") -> bool:
        """A calculation the question asked for succeeded: the answer is due."""
        ok = any(c.name == "calculate" and not r.startswith("error (") for c, r in policy.call_results(s.msgs))
        return ok and self.config.calculate_when_asked and policy.computes(s.task)

    def _answer_now(self, s: "RunState", t0: float) -> None:
        """End the run with an answer written from the evidence (the change is made, the
        calculation done, or the files a question names read)."""
        self._notice(s, "the work is done: the answer is written from the results")
        if self.config.report_changes and (report := policy.change_report(s.task, s.msgs)):
            s.msgs.append(Message("assistant", report))
            s.answer, s.stop = report, Stop(StopReason.ANSWERED, "the change was made")
            return
        gen = self._ask(s, self._evidence_msgs(s), Turn(ToolChoice("none")), t0, tools_shown=self._tools_in_answer())
        if gen is None:
            return
        content = policy.finished_answer(parse(gen.text).content.strip(), s.task, s.msgs)
        s.msgs.append(Message("assistant", content, raw=gen.text))
        s.answer, s.stop = content, Stop(StopReason.ANSWERED, "the model answered once the work was done")
        self._record(s.writer, s.records, s.step, gen, [], [], [], t0)

    def _search_terms(self, s: "RunState", choice: ToolChoice) -> list[str]:
        """The words the step must search for (policy.searches_first): at the first step, and
        once more after a search that found nothing."""
        cfg = self.config
        if not (cfg.search_task_words and self._must_look(s.task, choice)) or "search" not in self.tools.names():
            return []
        tried = policy.search_again(s.msgs) if s.step else set()
        if tried is None or not policy.searches_first(s.task, self.workspace):
            return []
        return policy.search_words(s.task, self.workspace, tried)[:50]

    def _finds(self, s: "RunState", choice: ToolChoice) -> tuple[list[str], list[str]] | None:
        """(globs, folders) the step's find_files must take (policy.finds_first): a question
        counting files of a type, or naming a file that is not there, until a find has run."""
        cfg = self.config
        if not (cfg.find_first and cfg.constrained and choice.mode == "auto") or "find_files" not in self.tools.names():
            return None
        if any(c.name == "find_files" for m in s.msgs if m.role == "assistant" for c in m.tool_calls):
            return None
        return policy.finds_first(s.task, self.workspace)

    def _must_look(self, task: str, choice: ToolChoice) -> bool:
        return (
            self.config.call_when_task_names_path
            and self.config.constrained
            and choice.mode == "auto"
            and policy.must_look(task, self.workspace)
        )

    def _next_reads(self, s: "RunState", choice: ToolChoice) -> list[str]:
        """Files the task names and the run has not read: the step must read one of them
        (a few steps at most, so that a task naming many files still ends)."""
        cfg = self.config
        if not (cfg.read_named_files and cfg.constrained and choice.mode == "auto") or "read_file" not in self.tools.names():
            return []
        if s.step >= cfg.limits.max_steps // 2:
            return []
        named = policy.unread_named(s.task, self.workspace, s.read)
        if named or not cfg.read_search_hits:
            return named
        return policy.hits_to_read(s.task, s.msgs, s.read) or policy.manifests_to_read(s.task, self.workspace, s.msgs, s.read)

    def _made_up(self, s: "RunState", content: str) -> bool:
        """A first answer to a question with numbers that no result or the task holds."""
        cfg = self.config
        if not (cfg.check_answers and cfg.constrained and self._choice.mode == "auto") or s.checked_answer:
            return False
        if policy.wants_change(s.task) or cfg.limits.max_steps - s.step < 2 or not any(m.role == "tool" and not m.content.startswith("error (") for m in s.msgs):
            return False
        return bool(policy.unsupported(content, s.task, s.msgs))

    def _resent(self, s: "RunState", c: ToolCall) -> ToolCall:
        """A read-only call sent again word for word after its error offered a corrected
        call that means the same (a misspelt path): the corrected call, run instead. The
        0.5B model sent src/mian.py three times, each after "to retry: ... src/main.py"."""
        retry = s.retries.get(c.canonical())
        t = self.tools.get(c.name)
        if retry is None or t is None or t.irreversible or not self.config.repeat_guard:
            return c
        if not policy.means_the_same(ErrorKind.NOT_FOUND, c.arguments, retry.get("arguments", {})):
            return c
        self._notice(s, f"{c.name} sent again with the path its error corrected")
        return ToolCall(c.id, retry["name"], retry.get("arguments", {}))

    def _change_not_made(self, s: "RunState") -> bool:
        """An answer to a task that asks for a change, with none made yet (the first time)."""
        cfg = self.config
        if not (cfg.change_on_repeat and cfg.constrained and self._choice.mode == "auto") or s.checked_change or s.changes:
            return False
        if any(m.role == "tool" and m.content.startswith(f"error ({ErrorKind.DENIED})") for m in s.msgs):
            return False  # a person refused the change: the answer says so, no second ask
        can = any(t.irreversible for t in self.tools) and cfg.limits.max_steps - s.step >= 1
        return can and policy.wants_change(s.task)

    def _echo(self, s: "RunState", content: str) -> bool:
        """An answer that only writes the task back, once something was found."""
        return self.config.answer_from_evidence and bool(s.answered or s.failed) and policy.echoes_task(content, s.task)

    def _repeat(self, s: "RunState", calls: list[ToolCall]) -> policy.Repeat:
        """Whether the turn only asks again for what the history holds: the same call, a
        call that failed after its corrected form succeeded (the 0.5B model goes back to
        the path the task named once it has read the right file), or a change already
        made; and if so, what it is taken to mean."""
        cfg = self.config
        if not (cfg.repeat_guard and cfg.constrained and self._choice.mode == "auto"):
            return policy.Repeat.NONE
        known = s.answered | s.changes | s.failed
        old = lambda c: c.canonical() in known or s.corrected.get(c.canonical()) in known or policy.rereads(c, s.whole)  # noqa: E731
        if not all(old(c) for c in calls):
            return policy.Repeat.NONE
        can_change = cfg.change_on_repeat and any(t.irreversible for t in self.tools)
        return policy.on_repeat(s.task, bool(s.changes)) if can_change else policy.Repeat.ANSWER

    def _fit(self, msgs: list[Message], schemas: list[dict[str, Any]]) -> tuple[list[Message], Stop | None]:
        """Fold old results so that the prompt plus one reply fits the window."""
        window = self.backend.context_size
        limit = min(self.config.context_limit or window, window) - self.config.max_tokens
        fits = lambda h: self.backend.prompt_tokens(h, schemas) <= limit  # noqa: E731
        out = fold(msgs, fits, keep_recent=self.config.keep_recent_results)
        if not fits(out):
            n = self.backend.prompt_tokens(out, schemas)
            return out, Stop(
                StopReason.CONTEXT_FULL,
                f"the prompt needs {n} tokens and only {max(limit, 0)} fit with room for a reply "
                f"of {self.config.max_tokens}, "
                "even with old tool results folded",
            )
        return out, None

    def _calls(self, gen: Generation, step: int) -> tuple[list[ToolCall], list[str], str]:
        parsed = parse(gen.text)
        calls = [ToolCall(f"call_{step}_{i}", c.name, c.arguments) for i, c in enumerate(parsed.calls)]
        errors = list(parsed.errors)
        if gen.finish_reason in ("length", "context") and errors:
            # The cut block never runs (parse reports it); complete calls before it do.
            errors = ["the reply hit the token limit inside a tool call; make the call shorter"]
        return calls, errors, parsed.content

    def _record_interrupted(self, writer: TraceWriter, records: list[StepRecord], f: "_InFlight") -> str:
        """Record the step an interrupt cut short; the partial answer: the prose streamed so
        far, or the prose of a turn whose calls were cut short."""
        text = "".join(f.streamed)
        if f.gen is None:  # cut off while generating
            gen = Generation(text=text, finish_reason="error", error="interrupted while generating")
            self._record(writer, records, f.step, gen, [], [], [], f.t0)
            return "" if text.lstrip().startswith(policy.STRUCTURED_STARTS) else text.strip()
        info = ToolErrorInfo(kind=ErrorKind.INTERRUPTED, message="the run was interrupted before this call finished")
        done = {r.call_id: r for r in f.results}
        results = [done.get(c.id) or ToolResult(c.id, c.name, info.render(), error=info) for c in f.calls]
        self._record(writer, records, f.step, f.gen, f.calls, results, [], f.t0)
        return f.content

    def _record(
        self,
        writer: TraceWriter,
        records: list[StepRecord],
        step: int,
        gen: Generation,
        calls: list[ToolCall],
        results: list[ToolResult],
        errors: list[str],
        t0: float,
    ) -> None:
        rec = StepRecord(step, gen, calls, results, errors, time.monotonic() - t0)
        records.append(rec)
        writer.write(TraceStep.of(rec))

    def _forced_answer(self, s: "RunState") -> str:
        """The best answer available after a forced stop, marked as forced: written from
        the evidence gathered, saying what was found and what was not done."""
        assert s.stop is not None
        answer = s.answer
        wants_final = s.stop.reason in (
            StopReason.MAX_STEPS,
            StopReason.REPEATED_CALL,
            StopReason.CONSECUTIVE_ERRORS,
            StopReason.RETRY_LIMIT,
        )
        if self.config.final_answer_on_stop and wants_final:
            if self.config.answer_from_evidence:
                reason = f"{s.stop.reason.value}: {s.stop.message}"
                ask = _system_turn(s.msgs) + [Message("user", policy.answer_prompt(s.task, s.msgs, forced=reason))]
                shown = self._tools_in_answer()
            else:
                ask, shown = list(s.msgs) + [Message("user", load_prompt("final_answer").strip())], True
            try:
                grammar = self._grammar(s.schemas, ToolChoice("none"))
                gen = self._generate(ask, s.schemas if shown else [], grammar, s.ev, None, choice=ToolChoice("none"))
                s.usage.add(gen)
                if gen.finish_reason != "error":
                    answer = parse(gen.text).content or answer
            except (ConstraintError, KeyboardInterrupt):
                pass
        note = load_prompt("forced_stop").strip().format(reason=s.stop.reason.value, message=s.stop.message)
        return f"{note}\n{answer}".rstrip()


def overview(root: Path, limit: int = 40) -> str:
    """One line naming what the root folder holds (folders end in '/')."""
    try:
        entries = sorted(
            (e.name + ("/" if e.is_dir() else "") for e in os.scandir(root) if not e.name.startswith(".")),
            key=str.lower,
        )
    except OSError:
        return ""
    more = f" (and {len(entries) - limit} more)" if len(entries) > limit else ""
    return "The folder you work in holds: " + ", ".join(entries[:limit]) + more + "."


@dataclass
class RunState:
    """Everything one run carries from step to step (an Agent holds none of it, so one
    Agent can run several tasks)."""

    task: str
    msgs: list[Message]
    schemas: list[dict[str, Any]]
    ev: Events
    writer: TraceWriter
    watch: StopWatch
    dispatcher: Dispatcher
    usage: Usage = field(default_factory=lambda: Usage())
    records: list[StepRecord] = field(default_factory=list)
    step: int = 0
    stop: Stop | None = None
    answer: str = ""
    answered: set[str] = field(default_factory=set)  # calls whose results are in the history
    corrected: dict[str, str] = field(default_factory=dict)  # a failed call -> the corrected call its error offered
    retries: dict[str, dict[str, Any]] = field(default_factory=dict)  # a failed call -> that corrected call
    changes: set[str] = field(default_factory=set)  # irreversible calls that succeeded
    failed: set[str] = field(default_factory=set)  # calls that failed with nothing to correct
    read: set[str] = field(default_factory=set)  # files read whole or in part, as named
    whole: set[str] = field(default_factory=set)  # files read from the first line to the last, unchanged since
    checked_answer: bool = False  # an answer was already sent back for holding made-up numbers
    checked_change: bool = False  # an answer was already sent back for a change not made
    changed: set[str] = field(default_factory=set)  # paths an irreversible call changed
    to_create: list[str] = field(default_factory=list)  # files the task asks to create (policy.to_create)
    retry_offered: bool = False  # the last step's error offered a corrected call not yet made
    path_failed: set[str] = field(default_factory=set)  # tools called with a wrong path
    reused_before: int = 0  # the previous prompt's length, while the history only grows
    inflight: "_InFlight | None" = None  # the step under way, for an interrupt
    started: float = field(default_factory=time.monotonic)


@dataclass
class Turn:
    """What one step may produce (Agent._turn_choice)."""

    choice: ToolChoice
    threshold: float | None = None  # the call-or-prose threshold; None: the grammar decides
    only: Literal["changes", "looks"] | None = None  # irreversible tools only, or read-only ones
    reads: list[str] = field(default_factory=list)  # the read must be of one of these files
    terms: list[str] = field(default_factory=list)  # the search must be for one of these words
    expressions: list[str] = field(default_factory=list)  # calculate takes one of these
    finds: tuple[list[str], list[str]] | None = None  # find_files takes one of these globs, folders
    relevance: float | None = None  # the best tool's fit to the task, where the first turn scored it
    no_tool: bool = False  # ... too low: prose, written as an answer is (evidence_without_tools)


@dataclass
class _InFlight:
    """The step under way: what an interrupt would otherwise lose."""

    step: int
    t0: float
    streamed: list[str] = field(default_factory=list)
    gen: Generation | None = None  # set once the model's turn is complete
    calls: list[ToolCall] = field(default_factory=list)
    content: str = ""  # the turn's prose beside its calls
    results: list[ToolResult] = field(default_factory=list)


# Errors that the same call meets again: sent again, it asks for nothing new.
_FINAL_ERRORS = policy.PATH_ERRORS | {ErrorKind.NOT_UNIQUE, ErrorKind.NOT_TEXT, ErrorKind.OUTSIDE_WORKSPACE, ErrorKind.NOT_READ, ErrorKind.NO_CHANGE}


def _narrow_path(schema: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """A tool schema whose ``path`` argument is one of ``paths`` (for the grammar only)."""
    fn = schema["function"]
    props = fn.get("parameters", {}).get("properties", {})
    if props.get("path", {}).get("type") != "string" or not paths:
        return schema
    params = {**fn["parameters"], "properties": {**props, "path": {"type": "string", "enum": paths}}}
    return {**schema, "function": {**fn, "parameters": params}}


def _with_enum(schema: dict[str, Any], arg: str, values: list[Any], required: bool = False) -> dict[str, Any]:
    """``schema`` with argument ``arg`` limited to ``values`` (and required)."""
    fn = schema["function"]
    params = fn["parameters"]
    props = {**params["properties"], arg: {**params["properties"][arg], "enum": values}}
    req = [*params.get("required", []), arg] if required and arg not in params.get("required", []) else params.get("required", [])
    return {**schema, "function": {**fn, "parameters": {**params, "properties": props, "required": req}}}


def _pattern_only(schema: dict[str, Any], terms: list[str]) -> dict[str, Any]:
    """search's schema with its pattern one of ``terms`` and nothing else (the whole root)."""
    fn = schema["function"]
    params = {**fn["parameters"], "properties": {"pattern": {"type": "string", "enum": terms}}, "required": ["pattern"]}
    return {**schema, "function": {**fn, "parameters": params}}


def _only_path(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool schema with its path argument alone (the others take their defaults)."""
    fn = schema["function"]
    props = fn.get("parameters", {}).get("properties", {})
    if "path" not in props:
        return schema
    params = {**fn["parameters"], "properties": {"path": props["path"]}, "required": ["path"]}
    return {**schema, "function": {**fn, "parameters": params}}


def _system_turn(msgs: list[Message]) -> list[Message]:
    """The system turn alone (its KV state is kept), or nothing."""
    return msgs[:1] if msgs and msgs[0].role == "system" else []


def _failure(gen: Generation) -> Stop | None:
    """The stop a failed generation calls for, or None."""
    if gen.finish_reason == "error":
        constraint = gen.constraint_error
        reason = StopReason.CONSTRAINT_ERROR if constraint else StopReason.BACKEND_ERROR
        return Stop(reason, gen.error or "the model failed")
    if gen.finish_reason == "context":
        return Stop(StopReason.CONTEXT_FULL, gen.error or "the context window is full")
    return None


def _partial_prose(text: str) -> str:
    """The prose of a turn cut short, or "" when it was (the start of) a call."""
    parsed = parse(text)
    if parsed.calls or parsed.errors or text.lstrip().startswith(policy.STRUCTURED_STARTS):
        return ""
    return parsed.content


def _format_error(step: int, i: int, message: str, gen: Generation) -> ToolResult:
    info = ToolErrorInfo(
        kind=ErrorKind.FORMAT_ERROR,
        message=message + f' ; a call is {CALL_OPEN}\n{{"name": ..., "arguments": {{...}}}}\n{CALL_CLOSE}',
    )
    return ToolResult(call_id=f"call_{step}_format{i}", name="(format)", content=info.render(), error=info)


def _config_dict(cfg: AgentConfig) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(cfg)
