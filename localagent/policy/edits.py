"""Changes: which files a write may name or must create, what an edit may replace and with
what, what a write may hold, when the change is made."""

from __future__ import annotations

import re

from ..tools.base import Tool
from ..tools.builtin import CONFIG_SUFFIXES, SETTING
from ..tools.workspace import PATH_SHAPED, Workspace, path_words
from .looks import _may_mean, unread_named
from .wording import _CHANGE_WORD, appends, quoted, task_words, wants_change


def writes_files(t: Tool) -> bool:
    """A tool that changes a file it names (write_file, edit_file), not a command."""
    return t.irreversible and "path" in t.parameters.get("properties", {})


def look_before_change(task: str, workspace: Workspace | None) -> bool:
    """Whether the first step of a change task must read rather than write: the task names
    a file that exists (a file to edit, or a source to copy from), so its contents matter."""
    return workspace is not None and wants_change(task) and bool(workspace.mentioned(task))


def writes_first(task: str, workspace: Workspace | None) -> bool:
    """Whether the first call is the write: the task creates a file with the text it gives
    and names nothing there to look at. Offered every tool for "mk hello.txt w/ one line:
    Status: ok", the 0.5B model read files in an unrelated folder until the repeat stop."""
    return bool(to_create(task, workspace)) and not look_before_change(task, workspace) and content_choices(task, [], creates=True) is not None


def ready_to_append(task: str, workspace: Workspace | None, read: set[str]) -> bool:
    """Whether an append task has read every existing file it names: the next call is the
    append. Only appends: forced to change right after the read, the 0.5B model answered
    "set port to 9090" with an appending write_file in 13 of 56 dev edits (55/56 -> 42/56)."""
    return appends(task) and look_before_change(task, workspace) and not unread_named(task, workspace, read)


def write_targets(task: str, workspace: Workspace | None, limit: int = 200) -> list[str] | None:
    """The paths a write may name when the task names files: those it names, and the
    existing file each one may misspell. None: no narrowing. Told "create hello.txt" in a
    folder holding docs/, the 0.5B model wrote docs/hello.txt (and, offered every file,
    docs/setup.md)."""
    if workspace is None or not wants_change(task):
        return None
    from ..validate import closest_names
    named = sorted(w for w in path_words(task) if PATH_SHAPED.fullmatch(w))
    existing = workspace.text_files(limit)
    if not named or len(existing) >= limit:
        return None
    out: list[str] = []
    for w in named:
        near = [] if w in existing else closest_names(w, existing, limit=1, cutoff=80)
        out += [p for p in [w, *near] if p not in out]  # a misspelling, or a new name: both
    return out


def to_create(task: str, workspace: Workspace | None, limit: int = 200, targets: list[str] | None = None) -> list[str]:
    """The files a change task names that do not exist and misspell no existing file: files
    to create. Told to copy a value "into a new file" the 0.5B model edited the source.
    ``targets``: ``write_targets`` already computed (it walks the tree)."""
    targets = targets if targets is not None else write_targets(task, workspace, limit)
    if not targets or workspace is None:
        return []
    existing = workspace.text_files(limit)
    return [t for t in targets if not any(_may_mean(t, e) for e in existing)]


def change_done(task: str, changed: set[str], to_create: list[str]) -> bool:
    """Whether a change task's change is made: one change succeeded and every file it asks
    to create exists. Then the run answers: left to go on, the 0.5B model appended the same
    line until the step limit, or undid a right edit with a second one."""
    return wants_change(task) and bool(changed) and all(p in changed for p in to_create)


# An argument whose value must be text copied from the file another argument names.
COPIED_TEXT = {"edit_file": ("old", "path")}


def spans(text: str, limit: int = 300, path: str = "") -> list[str] | None:
    """The pieces of a file an edit may replace: its lines (as they are, and stripped) and
    its words, in order of first appearance; None past ``limit`` (no narrowing then).
    Free to write old, the 0.5B model wrote 'old text', 'hi' or the file's path. In a
    settings file a setting's name alone is not offered: told "set workers to 10", the
    model replaced the name 'workers' with '26' or 'workers=10'."""
    names = {m.group(1).strip() for ln in text.splitlines() if (m := SETTING.match(ln))} if path.endswith(CONFIG_SUFFIXES) else set()
    out: dict[str, None] = {}
    for line in text.splitlines():
        for piece in (line, line.strip(), *re.findall(r"\S+", line), *re.findall(r"[\w.-]+", line)):
            if piece.strip() and piece not in names:
                out.setdefault(piece)
    return list(out) if len(out) <= limit else None


# Where an edit task's new text starts: "rename a to b", "replace a with b", "it should be b".
_NEW_TEXT = re.compile(
    r"\s(?:(?:to\s+)?be\s+(?:called|named|renamed)|to|into|with|becomes|turns into|(?:should|must|needs? to)\s+(?:now\s+)?(?:be(?:\s+(?:called|named|renamed))?|become|read)|->|=>|\u2192)\s",
    re.IGNORECASE,
)


def named_spans(task: str, pieces: list[str]) -> list[str]:
    """The pieces an edit may replace that hold a word the task names before its new text
    (all of them when none does). Offered every piece of the file, the 0.5B model renamed
    'hi' for 'rename fetch_items', and set 'debug = true' for 'change the log_level to debug'."""
    parts = _NEW_TEXT.split(task)
    head = " ".join(parts[:-1]) if len(parts) > 1 else task
    words = [w for w in task_words(head) if not _CHANGE_WORD.fullmatch(w) and not PATH_SHAPED.fullmatch(w)]
    named = {p.lower() for w in path_words(head) if PATH_SHAPED.fullmatch(w) for p in re.split(r"[/.]", w)}
    words = [w for w in words if w not in named]
    exact = [p for p in pieces if p.lower() in words]
    if exact:
        return exact  # the word itself ('fetch_items'): offered its lines, the model rewrote one
    rx = [re.compile(rf"(?<![\w-]){re.escape(w)}(?![\w-])", re.IGNORECASE) for w in words]
    kept = [p for p in pieces if any(r.search(p) for r in rx)]
    return kept or pieces


_RENAME = re.compile(r"\brenam|\brefactor|\bbe (called|named)\b|\w\s*(->|=>|\u2192)\s*\w", re.IGNORECASE)
_ONE_WORD = re.compile(r"[\w][\w.-]*")
_RENAME_TO = re.compile(
    r"\brenam\w*\s+(?:the\s+)?(?:(?:function|method|variable|name|class)\s+)?['\"`]?[A-Za-z_][\w.]*['\"`]?\s+(?:to|into|as)\s+['\"`]?([A-Za-z_]\w*)",
    re.IGNORECASE,
)


def new_word(task: str) -> str | None:
    """The one word an edit task gives as its new text: quoted after 'to', 'with' or 'should
    be' ("it should be 'receive'"), or, for a rename, the word after 'to'. Then the edit
    replaces a word of the file with it. Free, the 0.5B model wrote 'compute everywhere'
    for "rename calc to compute everywhere in app/worker.py"."""
    if not wants_change(task) or len(parts := _NEW_TEXT.split(task)) < 2:
        return None
    if m := _RENAME_TO.search(task):  # not the last 'to': "rename emit to publish, including every call to it"
        return m.group(1)
    tail = parts[-1]
    texts = quoted(tail)
    if texts:
        return texts[0] if len(texts) == 1 and _ONE_WORD.fullmatch(texts[0]) else None
    word = re.match(r"\s*([A-Za-z_]\w*)", tail) if _RENAME.search(task) else None
    return word.group(1) if word else None


def replaces_words(task: str) -> bool:
    """Whether a change replaces words inside a file (a rename, a word given as new text):
    then it is an edit, not a write. Offered write_file for "rename emit to publish", the
    0.5B model appended 'This is a test file.'."""
    return (edits_every(task) or new_word(task) is not None) and not appends(task)


def word_spans(pieces: list[str]) -> list[str]:
    """The pieces of a file that are one word (what a word given as new text replaces)."""
    return [p for p in pieces if _ONE_WORD.fullmatch(p)] or pieces


_EVERY = re.compile(
    r"\b(rename|every|everywhere|throughout|all occurrences|each occurrence|all uses)\b"
    r"|\ball (its |the |of its |of the )?(calls?|call sites|uses|references|occurrences|mentions)\b",
    re.IGNORECASE,
)


def edits_every(task: str) -> bool:
    """Whether an edit replaces every occurrence (edit_file's all=true): told to rename
    'load' everywhere, the 0.5B model sent the one-occurrence edit three times after its
    not_unique error."""
    return wants_change(task) and bool(_EVERY.search(task))


# The text a file must say, to the task's end: "it should just say Status: basalt ok" (the
# colon there is the text's own, not the one that introduces it).
_SAYS = re.compile(r"\b(?:just|only|simply)\s+(?:say|says|read|reads|contain|contains)\s*:?\s+(?!so\b)(\S.*?)\s*$", re.IGNORECASE)
_AFTER_COLON = re.compile(r":\s+(\S.*?)\s*$")
# Unquoted text put at a file's end: "Can you put - renew the passport at the end of F?"
_PUT_AT_END = re.compile(
    r"\b(?:put|add|append|stick|tack|pop|throw|write)\s+(?!(?:a|an|the|one|another|this|that|it|these|those)\b)"
    r"(\S.*?)\s+(?:at|to|on|onto)\s+the\s+(?:very\s+)?(?:end|bottom|foot)\b",
    re.IGNORECASE,
)
# Verbs that move a value from one file into another.
_COPY = re.compile(
    r"\b(copy|copies|copied|copying|take|save|saved|write|written|holding|holds|store|stored|put|record|recorded|keep|"
    r"place|placed|paste|pasted|transfer|transferred)\b",
    re.IGNORECASE,
)


def content_choices(task: str, sources: list[str], creates: bool = False) -> list[str] | None:
    """What a write's content may be, when the task says: a line or value of the file it
    copies from (``sources``: the texts of the files it names that were read); for an
    append, or a file it ``creates`` from nothing, the one text it quotes or gives after a
    colon. None: free. Left free, the 0.5B model wrote the task sentence itself into the
    file, and kept the quotes of "a file that just contains 'Welcome.'"."""
    append = appends(task)
    if sources and (creates or _COPY.search(task)) and not append:  # a new file from one read: "X from F -> new file G"
        return list(dict.fromkeys(p for text in sources for p in copy_pieces(text))) or None
    if not (append or (creates and not sources)):
        return None
    texts = [q for q in quoted(task) if not PATH_SHAPED.fullmatch(q)]
    if len(texts) == 1:
        return [texts[0]]
    if texts:
        return None
    for rx in (_SAYS, _AFTER_COLON, _PUT_AT_END if append else None):
        if rx and (m := rx.search(task)) and not PATH_SHAPED.fullmatch(m.group(1)):
            return [m.group(1)]
    return None


def copy_pieces(text: str) -> list[str]:
    """A file's lines, stripped, and the value of each 'name: value' or 'name = value' line."""
    out = []
    for line in (ln.strip() for ln in text.splitlines()):
        if line:
            out.append(line)
            if m := re.match(r"[^:=]{1,60}[:=]\s*(\S.*)$", line):
                out.append(m.group(1).strip().strip('"'))
    return out
