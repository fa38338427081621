"""What the task's words ask: a change, only to be told, an append, something worked out,
which file holds a word."""

from __future__ import annotations

import re

from ..tools.workspace import PATH_SHAPED, path_words


# A task that asks for a change: one of these verbs leads a sentence or a clause ("and
# change", "then fix") or follows "please", "can you", "I need you to" ("write out the
# names" and "add up" ask to be told).
_CHANGE_VERBS = (
    r"create|mk|touch|write(?!\s+out\b)|make(?!\s+(?:me\s+|us\s+)?a\s+list\b)|add(?!\s+up\b)|append|put(?!\s+together\b)|fix|"
    r"correct|rename|replace|change|set(?!\s+me\b)|update|edit|modify|delete|remove|copy|save(?!\s+me\b)|insert|move|"
    r"take(?!\s+(?:a\s+)?(?:quick\s+)?(?:look|peek|glance|gander)\b)|store|record|place|paste|enter|adjust|alter|amend|repair|"
    r"swap|switch|rewrite|overwrite|erase|clear|drop|bump|increase|decrease|stick|tack|jot|stash|duplicate|"
    r"turn(?!\s+up\b)|toggle|flip|raise|lower|reduce|restore|tweak|patch|revise|reword|retitle|refactor|convert"
)  # not the idioms that ask to be told: "take a look", "put together a list", "save me"
_CHANGE = re.compile(
    r"(?:^|[.!?:;]\s+|\bplease\s+|,\s*|\b(?:can|could|would|will)\s+you\s+(?:please\s+)?|\byou\s+to\s+|\bif\s+you\s+(?:could|can|would)\s+(?:please\s+)?"
    r"|\b(?:possible|able)\s+(?:for\s+you\s+)?to\s+|\b(?:as|enough)\s+to\s+"  # "Would it be possible to update F ...?", "be so kind as to change"
    r"|\b(?:in|inside|within)\s+[\w./-]+\.\w+\s+"  # "so in app/reader.py rename calc to compute"
    rf"|\b(?:and|then|so|let'?s|let\s+us|help\s+me)\s+)({_CHANGE_VERBS})\b(?![./]\w)",  # not 'store.txt'
    re.IGNORECASE,
)
# The same verbs after "would you mind", "try": "Would you mind changing the port in F to 80?"
_GERUND = re.compile(
    r"\b(?:mind|try|trying|start|consider|about)\s+(creating|writing|making|adding|appending|putting|fixing|correcting|"
    r"renaming|replacing|changing|setting|updating|editing|modifying|deleting|removing|copying|saving|inserting|moving|"
    r"storing|bumping|increasing|decreasing|switching|turning|sticking|tacking)\b",
    re.IGNORECASE,
)
# A state the task says a file must reach, with no verb to do it: "There is a typo in X:
# 'a' must become 'b'." (a held-out split's wording, read as a question and left undone).
_MUST_BE = re.compile(
    r"\b(must|should|needs? to|has to|have to|ought to)\s+(now\s+)?(be(?!\s+(?:in|at|inside|under|somewhere|there|here|located|stored|saved|kept|found)\b)|become|read|say|equal|contain|hold|have|get)\b"
    r"|\b\S+\s+(becomes|turns into)\s+\S+|[\w'\"]\s*(->|=>|\u2192)\s*['\"\w]"  # "emit -> publish in F"
    r"|\btypos?\b|\bmisspel|\bspell\w* (it |\S+ )?wrong|\bspelling (mistake|error)"
    r"|(?<![=!<>\w])[A-Za-z_][\w.-]*\s*=\s*[\w\"'.-]+",  # "port=9090 in config.toml": a setting's new state
    re.IGNORECASE,
)
# A file asked for, or a state wished for: "I need a file X with ...", "I want the port in X
# to be 80", "I'd like calc called compute instead" (asked to be told by their first words).
_WISH = re.compile(
    r"\b(new|fresh|empty)\s+file\b|\b(needs?|wants?|like)\s+(a|an)\s+file\b"
    r"|\b(wants?|like|needs?)\s+(?!to\b)(?:\S+\s+){1,8}?to\s+(be|become|read|say)\b|\bcalled\s+\S+\s+instead\b"
    r"|\b(needs?|wants?|like)\s+(one more|another|an extra|a new)\s+(line|entry|item|bullet|task|row)\b",
    re.IGNORECASE,
)
# A change wished for in the passive, question or not: "F needs its workers changed to 7 -
# can you do that?", "I want '- milk' added to F as the final line." (a held-out split's).
_DONE_TO = re.compile(
    r"\b(needs?|wants?|wanted|like|(?:can|could|may)\s+(?:i|we)\s+(?:please\s+)?get)\s+(?!been\b)(?:[^\s?!;]+\s+){1,8}?(?:"
    r"(changed|set|updated|bumped|increased|decreased|switched|renamed|fixed|corrected|edited|modified|replaced|made)\s+(to|into|with|from)"
    r"|(added|appended|inserted|written|copied|put|saved|stored|moved)\s+(to|into|onto|at|as)"  # not "the port stored in F"
    r"|(removed|deleted)\s+from|created\b)"
    # "Could workers in app.cfg be changed to 12?", "added after the others" (test8's)
    r"|^\s*(?:please\s+)?(?:can|could|would|will|may)\s+(?!you\b|i\b|we\b)(?:[^\s?!;]+\s+){1,8}?be\s+"
    r"(changed|set|updated|bumped|increased|decreased|switched|renamed|fixed|corrected|replaced|added|appended|removed|deleted|created)\b"
    r"|\b(added|appended|inserted)\s+(after|below|beneath|under)\b",
    re.IGNORECASE,
)
# A request put as a question is still a request: "Can you add X to the end of F?", "F
# needs X - can you do that?"
_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:can|could|would|will)\s+you\b"
    r"|\b(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:do|handle|sort(?:\s+out)?|take\s+care\s+of)\s+(?:that|it|this)\b",
    re.IGNORECASE,
)
_WH_START = re.compile(r"\s*(what|which|who|where|when|why|how)\b", re.IGNORECASE)
_QUESTION = re.compile(r"\?\s*$|^\s*(what|which|who|where|when|why|how|is|are|does|do)\b", re.IGNORECASE)


def wants_change(task: str) -> bool:
    """Whether the task asks for a change to the workspace (not only for an answer): a
    change verb, a file wished for, or a state a file must reach (unless it is a question
    or asks to be told), and a file to change ("Write a long story" asks for prose)."""
    request = _REQUEST.search(task)  # "Can you ...?" asks for something done
    question, told = (rx.search(task) and not request for rx in (_QUESTION, _ASKS))
    stated = not question and (_WISH.search(task) or ((_MUST_BE.search(task) or _APPEND.search(task)) and not told))
    stated = stated or (_DONE_TO.search(task) and not _WH_START.match(task))
    if not _CHANGE.search(task.strip()) and not _GERUND.search(task) and not stated:
        return False
    return bool(re.search(r"\b(file|folder)\b", task, re.IGNORECASE)) or any(PATH_SHAPED.fullmatch(w) for w in path_words(task))


_CHANGE_WORD = re.compile(rf"\b({_CHANGE_VERBS})\b(?![./]\w)", re.IGNORECASE)
# A question, or a request for something to be told, not done: "I need the port from X."
_ASKS = re.compile(
    r"(?:^|[.!?;:,\u2013\u2014-]\s+)\s*(?:please\s+|(?:can|could|would)\s+you\s+)?(what|which|who|where|when|why|how|is|are|does|do|list|tell|say|names?|"
    r"read|find|show|count|tally|give|get|report|look|check|open|according|print|write\s+out|identify|locate|determine|"
    r"fetch|grab|pull|dig|peek|figure|work\s+out|confirm|remind|let\s+me\s+know|fill\s+me\s+in|recall|spell|compute|"
    r"calculate|enumerate|summari[sz]e|display|search|scan|go\s+through|look\s+through|"
    r"need|(?:can|could|may)\s+(?:i|we)\s+(?:please\s+)?(?:get|have|see|know)|i\s+(?:need|want|would\s+like|wonder)|i'd\s+like|i'm\s+curious|(?:i'm\s+|i\s+am\s+)?(?:looking|searching)\s+for|trying\s+to\s+find)\b"
    r"|,\s*please[.!]?\s*$|\band\s+(?:then\s+)?(?:tell|say|name|show|give|report|list|let\s+me\s+know|fill\s+me\s+in)\b|\?\s*$",
    re.IGNORECASE,
)


def asks_only(task: str) -> bool:
    """Whether the task is only a question (a question word or mark, or a request to be
    told) that asks for no change: then no file is written. Having read
    notes/server.txt to answer "what port...?", the 1.5B model appended its answer to the
    file; asked "I need the port from notes/sever.txt.", it rewrote the file."""
    return bool(_ASKS.search(task)) and not wants_change(task)


# Words of a question that name nothing to search for.
_NOT_TERMS = frozenset(
    "what which who whom whose where when why how does did done is are was were the this that these those our my your "
    "its project folder repo repository directory workspace codebase package here there with from into for and not any "
    "all about declare declares declared number value say tell give show find list name configured configure set run "
    "runs running use used uses can could should would will file files one under mention mentions mentioned talk "
    "talks refer refers referred contain contains containing says report find out look check know want need please "
    "get grep search scan has have had hold holds".split()
)
# A question after the file that holds a word: "which file in docs mentions X?"
# (a file, not a value: "..., but I don't remember which. What is it?" asks for the value)
_WHICH_FILE = re.compile(
    r"\b(which|what|whichever)\s+(?:\w+\s+){0,2}?(files?|documents?)\b|\bwhere\s+(?:is|are|does|do|did)\s+(?!I\b|we\b)"
    r"|\bwhich\s+one\b|\bwhich\s+(is|was)\s+(it|that)\b|\b(its|the file'?s)\s+name\b|\bname of the (file|document)\b"
    r"|\b(file|document)\s+(is\s+)?called\b"
    r"|\b(tell|name|show|give|point|find|identify|locate)\s+(?:me\s+)?(?:to\s+)?the\s+(?:name\s+of\s+the\s+)?(files?|documents?)\b"
    r"|\bthe (file|document) (that|which|with|where|containing|mentioning)\b",
    re.IGNORECASE,
)
_MENTIONS = re.compile(
    r"\b(mention\w*|refer\w*|talks? about|contain\w*|says?|appear\w*|includ\w*|(has|with) (\S+ ){1,3}in it|brings? up|names"
    r"|(is|are) written|speaks? (of|about)|discuss\w*|cites?|quot\w*|words?|terms?|(comes?|shows?|pops?|turns?|crops?) up|occur\w*"
    r"|uses?|used|features?|(is|are) (that|it|this|they) in|(has|have|holds?|contains?) (it|that|this|them)"
    r"|(writing|wrote|written|notes?) about|(search|grep|scan)\s+\S+\s+for)\b",
    re.IGNORECASE,
)


def task_words(task: str) -> list[str]:
    """The words of a task a search can look for, in order: no question words, no words
    naming the folder itself."""
    words = (w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_]{2,}", task))
    return list(dict.fromkeys(w for w in words if w not in _NOT_TERMS))


def asks_which_file(task: str) -> bool:
    """Whether a question asks which file holds a word ("Which file in notes mentions
    X?"): offered list_dir, the 0.5B model listed the folder and named a file at random."""
    return bool(_WHICH_FILE.search(task) and _MENTIONS.search(task) and re.search(r"\b(files?|documents?)\b", task, re.IGNORECASE))


_APPEND = re.compile(
    r"\bappend|\b(at|to|on|onto) the (very )?(end|bottom|foot)\b|\b(new|last|final|closing|bottom) (line|item|entry|bullet|task|row)\b"
    r"|\b(one more|another|an extra|extra|a new|new) (line|entry|item|bullet|task|row)\b|\bonto\b|\bafter the last line\b",
    re.IGNORECASE,
)


# A quoted line added to a file or a list is added at its end unless the task says where:
# "Add '- clean the oven' to my list in docs/tasks.md" (a held-out split's, made an edit).
_ADD_QUOTED = re.compile(r"\b(add|adding|added|insert|include|tack|stick|pop|put|throw)\b\s+(?:the\s+(?:line|item|entry)\s+)?(?:'[^'\n]+'|\"[^\"\n]+\")\s+(?:to|in|into|onto|on)\b", re.IGNORECASE)
_PLACED = re.compile(r"\b(top|beginning|start|first line|before|above|line \d+|new file|a file)\b", re.IGNORECASE)


def appends(task: str) -> bool:
    """Whether the change asked for is lines added at a file's end: then the write appends
    (asked to append, the 0.5B model edited the first line instead)."""
    added = bool(_ADD_QUOTED.search(task)) and not _PLACED.search(task)
    return wants_change(task) and (bool(_APPEND.search(task)) or added)


def computes(task: str) -> bool:
    """Whether a question asks for something worked out (arithmetic, the larger of numbers,
    a word reversed): then, once what it names is read, the next call is ``calculate``.
    Asked for the total of 40 and 56 the 0.5B model wrote 92; 'stone' backwards, 'stone'.
    "At least"/"at most" ask for nothing: shown calculate for "Write a story, at least
    five paragraphs", the model called it with a runaway number."""
    return any(rx.search(task) for rx in _OPERATIONS.values()) and not wants_change(task)


_OPERATIONS = {
    "sum": re.compile(
        r"\b(total|sum|add up|adds up|plus|altogether|combined|in all|all told|across both|between (them|the two|both)|overall (number|count|amount|quantity)|counting both)\b|\bhow (many|much)\b[^?]*\b(both|across)\b|\b(how (many|much)|add)\b[^?]*\btogether\b|\d\s*\+\s*\d"
        r"|\badd(?:ing)?\s+-?\d[\d.]*\s+(?:and|to)\s+-?\d|\b(?:what|how much)(?:'s|\s+is|\s+are|\s+do|\s+does)?\s+-?\d[\d.]*\s+and\s+-?\d"
        r"|\d\s+and\s+-?\d[\d.]*\s+(?:make|makes|come to|comes to|equal|equals|give|gives)\b", re.IGNORECASE
    ),
    "max": re.compile(r"\b(larger|largest|bigger|biggest|greater|greatest|(?:has|have|holds?) more|(?<!at )most|higher|highest|maximum)\b", re.IGNORECASE),
    "min": re.compile(r"\b(smaller|smallest|fewer|fewest|(?<!at )least|lower|lowest|minimum)\b", re.IGNORECASE),
    "difference": re.compile(r"\b(difference|minus|subtract\w*)\b|\d\s*-\s*\d", re.IGNORECASE),
    "product": re.compile(r"\b(times|multiplied|product)\b|\d\s*[*\u00d7]\s*\d", re.IGNORECASE),
    "reverse": re.compile(
        r"\b(backwards?|reversed?|reverse|mirrored|invert(?:s|ed|ing)?)\b|\bfrom the last letter\b|\blast (letter|character) (to|first)\b"
        r"|\bright to left\b|\bback to front\b|\bend to (start|beginning)\b|\bread (it )?from the end\b(?! of)|\bletters in (the )?opposite order\b", re.IGNORECASE
    ),
    "length": re.compile(r"\bhow many (letters|characters)\b|\blength\b", re.IGNORECASE),
    "upper": re.compile(
        r"\b(capital letters|(?:in|all|block) capitals|upper[- ]?case|caps|(?:every|each) letter (?:is |as |in )?(?:a )?capital"
        r"|capitali[sz]e (?:every|each|all) (?:the )?letters?)\b", re.IGNORECASE
    ),
    "lower": re.compile(r"\b(lower[- ]?case|small letters)\b", re.IGNORECASE),
}


# Quoted text: masked where a request is cut into parts (_QUOTE), taken where a task gives
# its new text or what to work out in quotes (_QUOTED).
_QUOTE = re.compile(r"\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d|(?<!\w)'[^'\n]*'(?!\w)")
_QUOTED = re.compile(r"(?<!\w)'([^'\n]+)'(?!\w)|\"([^\"\n]+)\"|\u201c([^\u201d\n]+)\u201d")


def unwrapped(request: str) -> str:
    """A request written wholly inside one pair of quotes, read without them: the quotes
    hold the request, not text it gives (BFCL's ""Can you help me with two things? ..."").
    Any other request as it is."""
    text = request.strip()
    return text[1:-1] if _QUOTE.fullmatch(text) else request


def quoted(text: str) -> list[str]:
    """The texts ``text`` quotes, in order, without their quote marks (``_QUOTED``)."""
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
