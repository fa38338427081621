"""The agent's turn decisions (localagent/policy/), without a model, and the loop taking them on the fake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localagent import policy
from localagent.backends.fake import FakeBackend, call_text
from localagent.tools.builtin import workspace_tools
from localagent.loop import Agent, AgentConfig
from localagent.messages import Message, ToolCall
from localagent.stops import StopReason
from localagent.tools.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "setup.md").write_text("# Setup\n")
    (tmp_path / "config.cfg").write_text("port = 8080\n")
    (tmp_path / "notes.txt").write_text("Launch code: 4821\n")
    return Workspace(tmp_path)


@pytest.mark.parametrize(
    "task, change",
    [
        ("Create a file hello.txt containing the line 'hi'.", True),
        ("In app/main.py, rename calc to compute.", True),
        ("notes.txt has the misspelling 'wich'. Change it to 'which'.", True),
        ("Please add '- milk' to todo.md", True),
        ("Modify config.toml so the log_level becomes debug.", True),
        ("Write out the names of the functions in pkg/utils.py.", False),  # to be told
        ("Write the port into notes.txt.", True),
        # No change verb, a state the file must reach (a held-out split's wordings, left undone):
        ("There is a typo in notes/guide.md: 'teh' must become 'the'.", True),
        ("In config.cfg the port has to be 9090 from now on.", True),
        ("What should the port in config.cfg be?", False),
        ("Store the owner of ops/owner.txt in a new file owner.txt.", True),
        ("notes/guide.md spells 'receive' wrong.", True),
        ("Put one more line in todo.md: - call mum", True),
        ("todo.md should get the line '- call mum' at the end.", True),
        ("Tell me the last line of notes.txt.", False),  # asked to be told, not to add
        # A change asked as a request, or in a second clause (a held-out split's wordings):
        ("The port in config.ini should be 80 now, can you update it?", True),
        ("Could you please rename calc to compute in app/main.py?", True),
        ("Open config.ini and set the port to 80.", True),
        ("I want you to fix the typo in notes/guide.md.", True),
        ("I need a new file notes/port.txt with the port from config.ini.", True),
        ("Is there a new file in notes?", False),
        ("Which file mentions the update and the change?", False),
        ("What is the launch code in notes.txt?", False),
        ("Read config.cfg and tell me the port.", False),
        ("Which file mentions the update?", False),  # 'update' as a noun, not leading a clause
        ("Write a long story about a lighthouse keeper.", False),  # prose asked for, no file
        # A change wished for in the passive, a question tag after it:
        ("config.cfg needs its port changed to 9090 - can you do that?", True),
        ("I want '- call mum' added to todo.md as the final line.", True),
        ("I'd like the port in config.cfg set to 80.", True),
        ("I need the port stored in notes/port.txt.", False),  # what is stored there, to be told
        ("Please get me the owner stored in ops/owner.txt.", False),
        ("I have the port set to 80 in config.cfg; what is the host?", False),
        ("What do I need changed to 80 in config.cfg?", False),
        ("Would you mind changing the port in config.cfg to 80?", True),
        ("Let's rename calc to compute in app/main.py.", True),
        ("I'd be glad if you could set the port in config.cfg to 80.", True),
        ("Can you tell me what you could change in config.cfg?", False),
        ("Could you pop open notes.txt and tell me the code?", False),
        # Idioms that ask to be told, with a change verb in them:
        ("Could you take a look at notes.txt and tell me the code?", False),
        ("Can you put together a list of the functions in app/main.py?", False),
        ("Could you make me a list of the functions in app/main.py?", False),
        ("Save me a trip: what is the port in config.cfg?", False),
        ("Make sure the port in config.cfg is 80.", True),
        ("port=9090 in config.cfg please", True),  # a setting's new state
        # test6's (blind) misses: where a thing is is not a state to reach; "created", "becomes"
        ("Looking for the backup host. Should be in notes/Backup.txt.", False),
        ("I need motd.txt created, and its one line should be 'Welcome.'.", True),
        ("Refactor app/jobs.py: calc becomes compute, including every call.", True),
        ("emit -> publish in app/jobs.py, everywhere please", True),  # test7's (blind) misses
        ("What does port=80 mean in config.cfg?", False),
        ("Could workers in app.cfg be changed to 12? Thanks in advance.", True),  # test8's (blind) misses
        ("I need one more entry in todo.md, added after the others: '- buy milk'", True),
        ("Could you tell me if the port in app.cfg can be changed?", False),
        ("Can the port in app.cfg be found anywhere?", False),
        ("Would it be possible to update etc/app.ini so log_level is debug?", True),  # test9's (blind) misses
        ("mk hello.txt w/ one line: Status: ok", True),  # test10's (blind) misses
        ("Would you be so kind as to change port to 9313 in conf/app.cfg?", True),
        ("Our style guide wants clearer names, so in app/reader.py rename calc to compute everywhere.", True),
        ("Can I get '- buy milk' added as a new last line in todo.md?", True),
        ("Is it possible to tell me what port is in a.cfg?", False),
    ],
)
def test_wants_change(task: str, change: bool) -> None:
    assert policy.wants_change(task) is change


@pytest.mark.parametrize(
    "task, only",
    [
        ("What is the launch code in notes.txt?", True),
        ("I need the server port from notes/sever.txt.", True),  # a request to be told
        ("Can I get the backup host from admin/BACKUP.TXT? Thanks a lot.", True),
        ("Please tell me the owner named in ops/owner.txt", True),
        ("Could you look up the deadline in docs/plan.md", True),
        ("Get me the backup host out of config/backup.txt.", True),
        ("Write out the names of the functions in pkg/utils.py.", True),
        ("Print the names of the functions found in app/core.py.", True),
        ("The word lantern appears in a file in docs. Tell me which file.", True),  # the ask comes second
        ("Search docs and then tell me which file has lantern.", True),
        ("Identify the file under docs that mentions lantern.", True),
        ("There is a typo in notes/guide.md: 'teh' must become 'the'.", False),
        ("Set port to 9090 in config.cfg.", False),
        ("I need you to fix the typo in notes.txt.", False),  # a change word anywhere
        ("Can you add '- milk' to todo.md?", False),
        ("The deploy script is broken.", False),  # neither: writes stay offered
        ("Open ops/owner.txt and let me know the owner.", True),
        ("Tally up the .md files in docs for me.", True),
        ("Enumerate the functions of app/helpers.py.", True),
        ("Work out 32 + 76.", True),
        ("Version of this project, please.", True),
        ("Looking for the door code. Should be in ops/Door.txt.", True),
    ],
)
def test_asks_only_questions_and_requests_to_be_told(task: str, only: bool) -> None:
    assert policy.asks_only(task) is only


def test_must_look_for_paths_the_folder_itself_and_changes(ws: Workspace) -> None:
    assert policy.must_look("What version does this project declare?", ws)
    assert policy.must_look("What is in confg.cfg?", ws)  # shaped like a path, not there
    assert policy.must_look("Create a file hello.txt", ws)
    assert not policy.must_look("What is 12 plus 30?", ws)
    assert not policy.must_look("What is 12 plus 30?", None)


def test_look_before_change_only_when_the_task_names_what_exists(ws: Workspace) -> None:
    assert policy.look_before_change("Copy the launch code from notes.txt into a new file code.txt.", ws)
    assert not policy.look_before_change("Create a file hello.txt with the word hi.", ws)
    assert not policy.look_before_change("What does notes.txt say?", ws)


def test_write_targets_are_the_named_paths_and_what_they_misspell(ws: Workspace) -> None:
    assert policy.write_targets("Create a file hello.txt with the word hi.", ws) == ["hello.txt"]
    assert policy.write_targets("Set port to 9090 in confg.cfg.", ws) == ["confg.cfg", "config.cfg"]
    assert policy.write_targets("Make a file notes2.txt saying done.", ws) == ["notes2.txt", "notes.txt"]
    assert policy.write_targets("Change the port to 9090.", ws) is None  # names no file: no narrowing
    assert policy.write_targets("What is in notes.txt?", ws) is None  # no change asked


def test_echoes_task() -> None:
    task = "Read config/meting.txt and tell me the meeting room."
    assert policy.echoes_task("Read config/meeting.txt and tell me the meeting room.", task)
    assert policy.echoes_task("tell me the meeting room", task)
    assert not policy.echoes_task("The meeting room is Juniper 317.", task)
    assert not policy.echoes_task("", task)
    assert policy.echoes_task("The folder you work in holds: notes/, docs/.\n\n" + task, task)  # the task inside


def _history(*pairs: tuple[ToolCall, str]) -> list[Message]:
    msgs = [Message("system", "sys"), Message("user", "the task")]
    for c, content in pairs:
        msgs += [Message("assistant", "", tool_calls=[c]), Message("tool", content, tool_call_id=c.id, name=c.name)]
    return msgs


def test_evidence_keeps_findings_and_drops_corrected_errors() -> None:
    read = ToolCall("a", "read_file", {"path": "notes.txt"})
    wrong = ToolCall("b", "read_file", {"path": "nots.txt"})
    missing = ToolCall("c", "read_file", {"path": "CHANGELOG.md"})
    msgs = _history(
        (wrong, 'error (not_found): path \'nots.txt\' not found; closest: notes.txt; to retry: {"name": "read_file"}'),
        (read, "Launch code: 4821\n[end of notes.txt: 1 line]"),
        (read, "Launch code: 4821\n[end of notes.txt: 1 line]"),  # the same result once
        (missing, "error (not_found): path 'CHANGELOG.md' not found"),
    )
    found = policy.evidence(msgs)
    assert [e.call.id for e in found] == ["a", "c"]
    prompt = policy.answer_prompt("What is the launch code?", msgs)
    assert prompt.startswith("Question: What is the launch code?")
    assert "Contents of notes.txt:\nLaunch code: 4821" in prompt
    assert "Contents of CHANGELOG.md: none: path 'CHANGELOG.md' not found" in prompt
    assert "nots.txt" not in prompt and "read_file(" not in prompt  # in words, not as calls


def test_on_repeat() -> None:
    assert policy.on_repeat("Change the port in config.cfg to 9090.", changed=False) is policy.Repeat.CHANGE
    assert policy.on_repeat("Change the port in config.cfg to 9090.", changed=True) is policy.Repeat.ANSWER
    assert policy.on_repeat("What is the port in config.cfg?", changed=False) is policy.Repeat.ANSWER


# ── the loop taking the decisions, on the fake ──


def _agent(ws: Workspace, replies: list[object]) -> tuple[Agent, FakeBackend]:
    fake = FakeBackend.scripted(replies)
    return Agent(fake, workspace_tools(ws), root=ws.root, config=AgentConfig(system_prompt="sys")), fake


def test_an_answer_that_writes_the_task_back_is_asked_again_from_the_evidence(ws: Workspace) -> None:
    task = "Read notes.txt and tell me the launch code."
    agent, fake = _agent(ws, [call_text("read_file", path="notes.txt"), task, "The launch code is 4821."])
    agent.config.answer_once_read = False  # else the answer after the read is already from the evidence
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED and r.answer == "The launch code is 4821."
    asked = fake.requests[-1]
    assert [m.role for m in asked] == ["system", "user"] and "Launch code: 4821" in asked[-1].content


def test_listing_a_file_read_whole_is_a_repeat_answered_from_the_evidence(ws: Workspace) -> None:
    assert policy.rereads(ToolCall("", "list_dir", {"path": "notes.txt"}), {"notes.txt"})
    assert not policy.rereads(ToolCall("", "list_dir", {"path": "docs"}), {"notes.txt"})
    task = "List the lines of notes.txt."
    read, listing = call_text("read_file", path="notes.txt"), call_text("list_dir", path="notes.txt")
    agent, fake = _agent(ws, [read, listing, "It holds one line: Launch code: 4821."])
    agent.config.answer_when_covered = False  # else the read alone answers the question
    r = agent.run(task)
    assert r.answer == "It holds one line: Launch code: 4821." and len(fake.requests) == 3
    assert [m.role for m in fake.requests[-1]] == ["system", "user"]  # the evidence prompt, not the listing's error


def test_a_repeat_in_a_change_task_asks_for_the_change(ws: Workspace) -> None:
    task = "Set port to 9090 in config.cfg."
    read = call_text("read_file", path="config.cfg")
    edit = call_text("edit_file", path="config.cfg", old="port=8080", new="port=9090")
    agent, fake = _agent(ws, [read, read, edit, "Done."])
    agent.approver = lambda *a: (True, "")
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED
    assert (ws.root / "config.cfg").read_text() == "port = 9090\n"  # the file's spacing kept
    assert "edit_file replaces exact text" in fake.requests[2][-1].content


def test_an_answer_before_the_change_is_sent_back_once_for_the_change(ws: Workspace) -> None:
    task = "Set port to 9090 in config.cfg."
    read = call_text("read_file", path="config.cfg")
    edit = call_text("edit_file", path="config.cfg", old="port = 8080", new="port = 9090")
    agent, fake = _agent(ws, [read, "The port is set to 9090.", edit, "Done."])
    agent.approver = lambda *a: (True, "")
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED and r.answer == "Done: edited 'config.cfg' at line 1: 'port = 8080' -> 'port = 9090'"
    assert (ws.root / "config.cfg").read_text() == "port = 9090\n"
    assert "make the change the task asks for" in fake.requests[2][-1].content
    assert r.records[1].generation.change_not_made == "The port is set to 9090."
    # Once only: a second answer without the change is taken.
    agent, _ = _agent(ws, [read, "Set.", "Set, really."])
    assert agent.run(task).answer == "Set, really."


def test_an_append_task_appends(ws: Workspace) -> None:
    agent, _ = _agent(ws, [])
    c = agent._grammar(agent.tools.schemas(), agent._choice, task="Append the line 'done' to notes.txt.", read={"notes.txt"})
    assert c is not None and "edit_file" not in c.text and "write_file" in c.text
    assert policy.appends("Add 'milk' at the end of todo.md.") and not policy.appends("Create a file a.txt with one line.")
    assert not policy.appends("What is the last line of notes.txt?")  # a question, not a change
    assert policy.appends("Please add '- milk' as the final line of todo.md.")
    assert policy.appends("Add '- clean the oven' to my list in docs/tasks.md, after everything that's already there.")
    assert policy.appends("Please add '- milk' to todo.md")  # a quoted line added to a file: at its end
    assert not policy.appends("Add the line 'x' to the top of notes.txt")  # unless it says where
    assert policy.appends("Could you add - clean the oven as the last item in docs/tasks.md?")


def test_once_the_named_file_is_read_an_append_task_appends_next(ws: Workspace) -> None:
    task = "Add one more line to notes.txt: Launch at noon."
    assert not policy.ready_to_append(task, ws, set()) and policy.ready_to_append(task, ws, {"notes.txt"})
    assert not policy.ready_to_append("What is in notes.txt?", ws, {"notes.txt"})  # a question
    assert not policy.ready_to_append("Set port to 9090 in config.cfg.", ws, {"config.cfg"})  # an edit
    read = call_text("read_file", path="notes.txt")
    write = call_text("write_file", path="notes.txt", content="Launch at noon.\n")
    agent, fake = _agent(ws, [read, write, "Added."])
    agent.approver = lambda *a: (True, "")
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED and r.steps == 2  # the read, the append; the report is no step
    looks, change = (fake.options[i].grammar or "" for i in (0, 1))
    assert "read_file" in looks and "write_file" not in looks
    assert "write_file" in change and "read_file" not in change and "list_dir" not in change
    # Off, the step after the read may look again.
    agent, fake = _agent(ws, [read, write, "Added."])
    agent.config.append_once_read, agent.approver = False, lambda *a: (True, "")
    agent.run(task)
    assert "read_file" in (fake.options[1].grammar or "")


def test_the_workspace_tools_are_the_built_in_ones(ws: Workspace) -> None:
    assert policy.WORKSPACE_TOOLS == {t.name for t in workspace_tools(ws, allow_commands=True)}


def test_a_question_whose_named_files_are_read_whole_is_answered_next(ws: Workspace) -> None:
    task = "What is the launch code in notes.txt?"
    assert not policy.answers_once_read(task, ws, set()) and policy.answers_once_read(task, ws, {"notes.txt"})
    assert policy.answers_once_read("What is the launch code in notse.txt?", ws, {"notes.txt"})  # the file it can only mean
    assert not policy.answers_once_read("What is 3 plus the number in notes.txt?", ws, {"notes.txt"})  # to work out
    assert not policy.answers_once_read("Add 'x' to notes.txt.", ws, {"notes.txt"})  # a change
    assert not policy.answers_once_read("Which file mentions the launch?", ws, {"notes.txt"})  # names no file
    assert not policy.answers_once_read(task, ws, {"notes.txt"}, ["read_file", "word_count"])  # a tool of the user's
    read = call_text("read_file", path="notes.txt")
    agent, fake = _agent(ws, [read, "The launch code is 4821."])
    agent.config.answer_once_read = True  # off by default (see AgentConfig)
    r = agent.run(task)
    assert r.answer == "The launch code is 4821." and r.steps == 2
    assert [m.role for m in fake.requests[1]] == ["system", "user"] and "Launch code: 4821" in fake.requests[1][-1].content


def test_a_failed_call_sent_again_is_answered_from_what_was_found(ws: Workspace) -> None:
    task = "What does CHANGELOG.md say? If there is none, say so."
    missing = call_text("read_file", path="CHANGELOG.md")
    agent, fake = _agent(ws, [missing, missing, "There is no CHANGELOG.md."])
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED and r.answer == "There is no CHANGELOG.md."
    assert "none: path 'CHANGELOG.md' not found" in fake.requests[-1][-1].content


def test_writes_are_narrowed_to_the_paths_the_task_names(ws: Workspace) -> None:
    agent, _ = _agent(ws, [])
    c = agent._grammar(agent.tools.schemas(), agent._choice, task="Create a file hello.txt with the word hi.")
    assert c is not None and '\\"hello.txt\\"' in c.text and "docs/setup.md" not in c.text


def test_a_file_to_create_is_what_the_task_names_and_no_file_misspells(ws: Workspace) -> None:
    task = "Copy the launch code from notes.txt into a new file code.txt."
    assert policy.to_create(task, ws) == ["code.txt"]
    assert policy.to_create("Set port to 9090 in confg.cfg.", ws) == []  # a misspelling: an edit
    assert policy.to_create("Create docs/Setup.md with one line.", ws) == []  # the same file in another case
    (ws.root / "code.txt").write_text("4821\n")
    assert policy.to_create(task, ws) == []  # once created, the named files are all targets


def test_a_copy_writes_the_new_file_and_cannot_edit_its_source(ws: Workspace) -> None:
    agent, _ = _agent(ws, [])
    task = "Copy the launch code from notes.txt into a new file code.txt."
    c = agent._grammar(agent.tools.schemas(), agent._choice, task=task, read={"notes.txt"})
    assert c is not None and '\\"code.txt\\"' in c.text and "edit_file" not in c.text and '\\"notes.txt\\"' not in c.text


def test_an_edit_copies_old_from_the_file_it_read(ws: Workspace) -> None:
    agent, _ = _agent(ws, [])
    task = "Set the port in config.cfg to 9090."
    c = agent._grammar(agent.tools.schemas(), agent._choice, task=task, read={"config.cfg"})
    assert c is not None and '\\"port = 8080\\"' in c.text
    assert '\\"8080\\"' not in c.text  # old is a piece that holds the word the task names
    unread = agent._grammar(agent.tools.schemas(), agent._choice, task=task)
    assert unread is not None and '\\"port = 8080\\"' not in unread.text  # not read yet: old is free


@pytest.mark.parametrize(
    "task, want",
    [
        ("Change the log_level in etc/settings.ini to debug.", ['log_level = "info"']),
        ("In src/w.py, rename fetch_items to get_items.", ["fetch_items"]),  # the word itself, not its lines
        ("Replace every fetch_items in src/w.py with get_items.", ["fetch_items"]),
        ("Fix the spelling in a.md: recieve it should be receive.", ["You recieve it."]),
        ("Make the greeting friendlier in a.md.", ["You recieve it.", "hi", "debug = false"]),  # nothing named: all
        ("The log_level in etc/app.cfg should now be debug; please update it.", ['log_level = "info"']),
    ],
)
def test_an_edit_replaces_a_piece_the_task_names_before_its_new_text(task: str, want: list[str]) -> None:
    pieces = ['log_level = "info"', "debug = false", "def fetch_items(text):", "fetch_items", "hi", "You recieve it."]
    got = policy.named_spans(task, pieces)
    assert all(w in got for w in want) and (len(got) == len(pieces) or len(got) == len(want)), got


@pytest.mark.parametrize(
    "task, sources, want",
    [
        ("Append the line '- buy milk' to todo.md.", [], ["- buy milk"]),
        ("Add one more line to todo.md: - buy milk", [], ["- buy milk"]),
        ("Append a line about milk to todo.md.", [], None),  # no text given: free
        ("Copy the owner from a.txt into a new file b.txt.", ["Note.\nOwner: Ines Silva\n"], ["Note.", "Owner: Ines Silva", "Ines Silva"]),
        ("Create b.txt with a haiku.", ["Owner: Ines Silva\n"], None),  # not a copy
        ("Can you put - renew the passport at the end of todo.md? Don't touch the rest.", [], ["- renew the passport"]),
        ("I'd like the owner out of a.txt saved on its own in a new file at b.txt.", ["Owner: Ines Silva\n"], ["Owner: Ines Silva", "Ines Silva"]),
    ],
)
def test_a_write_holds_the_text_the_task_gives(task: str, sources: list[str], want: list[str] | None) -> None:
    assert policy.content_choices(task, sources) == want


def test_an_append_and_a_copy_are_narrowed_in_the_grammar(ws: Workspace) -> None:
    agent, _ = _agent(ws, [])
    c = agent._grammar(agent.tools.schemas(), agent._choice, task="Append the line 'x9 done' to notes.txt.", read={"notes.txt"})
    assert c is not None and '\\"x9 done\\"' in c.text
    task = "Copy the launch code from notes.txt into a new file code.txt."
    c = agent._grammar(agent.tools.schemas(), agent._choice, task=task, read={"notes.txt"})
    assert c is not None and '\\"4821\\"' in c.text and '\\"Launch code: 4821\\"' in c.text


def test_a_question_for_the_file_that_mentions_a_word_searches_the_word(ws: Workspace) -> None:
    assert not policy.searches_first("What does config/secrets.env say? If there is no such file, say so.", ws)
    task = "Which file in docs mentions the zeppelin?"
    assert policy.searches_first(task, ws) and policy.search_words(task, ws) == ["zeppelin"]
    task = "grep docs for zeppelin and tell me which file has it"  # the verb is not a word to look for
    assert policy.searches_first(task, ws) and policy.search_words(task, ws) == ["zeppelin"]
    assert not policy.searches_first("What does docs/setup.md say about the zeppelin?", ws)  # a file is named
    assert not policy.searches_first("Which file is the largest in docs?", ws)  # no word to look for


def test_a_search_that_found_nothing_is_followed_by_another_word() -> None:
    from localagent.messages import Message, ToolCall
    call = ToolCall("c1", "search", {"pattern": "server"})
    history = [Message("user", "q"), Message("assistant", "", tool_calls=[call]), Message("tool", "no matches for 'server' in '.'", tool_call_id="c1")]
    assert policy.search_again(history) == {"server"}
    history[-1] = Message("tool", "a.toml:1: port = 80", tool_call_id="c1")
    assert policy.search_again(history) is None


def test_spans_are_lines_and_words_and_none_past_the_limit() -> None:
    assert policy.spans("port = 8080\n  x.y(1)\n") == ["port = 8080", "port", "=", "8080", "  x.y(1)", "x.y(1)", "x.y", "1"]
    assert policy.spans("".join(f"w{i}\n" for i in range(400))) is None


def test_unread_named_files(ws: Workspace) -> None:
    task = "What is the total in notes.txt and config.cfg? And in budget.txt?"
    assert policy.unread_named(task, ws, set()) == ["config.cfg", "notes.txt"]
    assert policy.unread_named(task, ws, {"notes.txt"}) == ["config.cfg"]
    # A folder named where a file is meant: its one or two files are read; not when counting.
    assert policy.unread_named("What is the setup note in the docs folder?", ws, set()) == ["docs/setup.md"]
    assert policy.unread_named("How many files are in docs?", ws, set()) == []
    # A path named wrong means the one file it can mean: misspelt, in another case or folder.
    assert policy.unread_named("What is the port in confg.cfg?", ws, set()) == ["config.cfg"]
    assert policy.unread_named("Read DOCS/SETUP.MD please.", ws, set()) == ["docs/setup.md"]
    assert policy.unread_named("What does notes/setup.md say?", ws, set()) == ["docs/setup.md"]
    assert policy.unread_named("What does CHANGELOG.md say?", ws, set()) == []  # means nothing there


def test_unsupported_numbers() -> None:
    msgs = _history((ToolCall("a", "read_file", {"path": "notes.txt"}), "Launch code: 4821"))
    assert policy.unsupported("The launch code is 4821.", "What is the code?", msgs) == []
    assert policy.unsupported("The project declares version 1.0.0.", "What version?", msgs) == ["1.0.0"]
    assert policy.unsupported("Port 9090 as asked.", "Is the port 9090?", msgs) == []  # the task holds it


def test_the_named_files_are_read_first(ws: Workspace) -> None:
    task = "Add up the numbers in notes.txt and config.cfg."
    replies = [call_text("read_file", path="notes.txt"), call_text("read_file", path="config.cfg"), "4821 + 8080 = 12901"]
    agent, _ = _agent(ws, replies)
    c = agent._grammar(agent.tools.schemas(), agent._choice, reads=["config.cfg", "notes.txt"])
    assert c is not None and "docs/setup.md" not in c.text
    r = agent.run(task)
    assert [c.arguments["path"] for rec in r.records for c in rec.calls] == ["notes.txt", "config.cfg"]
    assert r.stop_reason is StopReason.ANSWERED


def test_an_answer_with_made_up_numbers_is_sent_back_once(ws: Workspace) -> None:
    task = "What version does this project declare?"
    replies = [call_text("list_dir", path="."), "Version 1.0.0.", call_text("read_file", path="config.cfg"), "Version 2.0.0."]
    agent, _ = _agent(ws, replies)
    r = agent.run(task)
    assert r.answer == "Version 2.0.0." and r.stop_reason is StopReason.ANSWERED  # checked once, then taken
    assert [len(rec.calls) for rec in r.records] == [1, 0, 1, 0]
    assert r.records[1].generation.info["unsupported_answer"] == "Version 1.0.0."


def test_a_corrected_path_is_required_only_when_it_means_the_path_given() -> None:
    assert policy.means_the_same("not_found", {"path": "docs/dadline.txt"}, {"path": "docs/deadline.txt"})
    assert policy.means_the_same("not_found", {"path": "Docs/x.md"}, {"path": "docs/x.md"})
    # The nearest file to one that is not there is not what was asked for: no forced read.
    assert not policy.means_the_same("not_found", {"path": "config/secrets.env"}, {"path": "misc/orbit.md"})
    assert policy.means_the_same("not_a_file", {"path": "docs"}, {"path": "docs/setup.md"})


def test_a_read_sent_again_after_its_correction_runs_the_corrected_call(ws: Workspace) -> None:
    task = "Read confg.cfg and tell me the port."
    wrong = call_text("read_file", path="confg.cfg")
    agent, fake = _agent(ws, [wrong, wrong, "The port is 8080."])
    agent.config.read_named_files = False  # the error path alone
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED and r.answer == "The port is 8080."
    sent = [c.arguments["path"] for rec in r.records for c in rec.calls]
    assert sent == ["confg.cfg", "config.cfg"] and "port = 8080" in fake.requests[-1][-1].content


def test_the_read_of_a_named_file_is_of_the_whole_file(ws: Workspace) -> None:
    agent, _ = _agent(ws, [])
    c = agent._grammar(agent.tools.schemas(), agent._choice, reads=["notes.txt"])
    assert c is not None and '\\"notes.txt\\"' in c.text
    assert dict(c.keys)["read_file"] == ("path",)  # no offset or length to choose


@pytest.mark.parametrize(
    "task, writes",
    [
        ("What is the server port in notes/server.txt?", False),
        ("Read docs/door.txt and tell me the door code.", False),
        ("How many .png files are in assets?", False),
        ("Find and fix the typo in notes.txt.", True),  # a change word anywhere: writes stay
        ("Fix the bug", True),
        ("What should I add to notes.txt? Add it.", True),
        ("Run the tests", True),
    ],
)
def test_a_question_is_offered_no_file_writes(ws: Workspace, task: str, writes: bool) -> None:
    agent, _ = _agent(ws, [])
    c = agent._grammar(agent.tools.schemas(), agent._choice, task=task)
    assert c is not None and "read_file" in c.text
    assert ("write_file" in c.text) is writes and ("edit_file" in c.text) is writes


# ── finishing a change, searching the task's words, settings edits ─────────────────────


def test_task_words_and_when_the_first_call_searches(ws: Workspace) -> None:
    assert policy.task_words("On what port is the service in this folder configured to run?") == ["port", "service"]
    assert policy.task_words("Which version number is this project at?") == ["version"]
    assert policy.searches_first("What version does this project declare?", ws)
    assert not policy.searches_first("What is the port in config.cfg?", ws)  # a path named: read it
    assert not policy.searches_first("Set the version of this project to 2.0 in config.cfg", ws)  # a change
    assert not policy.searches_first("What is 12 plus 30?", ws)  # not about the folder


def test_a_question_about_the_folder_starts_with_a_search_for_its_words(ws: Workspace) -> None:
    task = "Which port does this project listen on?"
    replies = [call_text("search", pattern="port"), call_text("read_file", path="config.cfg"), "It listens on port 8080."]
    agent, fake = _agent(ws, replies)
    r = agent.run(task)
    assert [c.name for rec in r.records for c in rec.calls] == ["search", "read_file"]
    grammar = fake.options[0].grammar or ""
    assert '\\"port\\"' in grammar and '\\"listen\\"' in grammar and "read_file" not in grammar
    # The file the search found is read before the answer: its one line may not hold the value.
    assert fake.options[1].tool_choice == "read_file" and '\\"config.cfg\\"' in (fake.options[1].grammar or "")
    assert "8080" in r.answer


def _searched(pattern: str, result: str) -> list[Message]:
    call = ToolCall("c1", "search", {"pattern": pattern})
    return [Message("user", "q"), Message("assistant", "", tool_calls=[call]), Message("tool", result, tool_call_id="c1")]


def test_the_files_a_search_found() -> None:
    found = _searched("port", "a.toml:1: [server]\nsub/b.ini:4: port = 80\na.toml:2: port = 9\n[3 matches in 2 files]")
    assert policy.search_hits(found) == ["a.toml", "sub/b.ini"]
    assert policy.search_hits(_searched("port", "no matches for 'port' in '.' (4 text files searched)")) == []
    assert policy.search_hits(_searched("port", "error (invalid_argument): bad: x:1: y")) == []
    ask = "What port does the server here use?"
    assert policy.hits_to_read(ask, found, set()) == ["a.toml", "sub/b.ini"]
    assert policy.hits_to_read(ask, found, {"sub/b.ini"}) == []  # one of them is read
    assert policy.hits_to_read("Which file in docs mentions the port?", found, set()) == []  # the hit is the answer
    assert policy.hits_to_read("Set the port in the config to 90.", found, set()) == []  # not a question
    many = _searched("port", "\n".join(f"f{i}.txt:1: port" for i in range(4)))
    assert policy.hits_to_read(ask, many, set()) == []  # too many to pick one


def test_a_which_file_question_is_answered_once_a_search_found_the_word(ws: Workspace) -> None:
    (ws.root / "docs" / "trip.md").write_text("The zeppelin lands at noon.\n")
    task = "Tell me which file of docs contains zeppelin."
    agent, fake = _agent(ws, [call_text("search", pattern="zeppelin"), "It is docs/trip.md."])
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED and r.answer == "It is docs/trip.md."
    assert [c.name for rec in r.records for c in rec.calls] == ["search"]
    assert fake.tools_seen[-1] == [] and "docs/trip.md:1: The zeppelin" in fake.requests[-1][-1].content  # from the evidence
    found = _searched("zeppelin", "docs/trip.md:1: The zeppelin lands at noon.")
    assert policy.with_found_files("The file in docs talks about zeppelin.", task, found).endswith("(found in docs/trip.md)")
    assert policy.with_found_files("It is trip.md.", task, found) == "It is trip.md."  # named already
    assert not policy.found_by_search(task, _searched("zeppelin", "no matches for 'zeppelin' in 'docs' (1 text file searched)"))


def test_a_question_about_the_thing_here_looks_first(ws: Workspace) -> None:
    assert policy.must_look("What port does the server here use?", ws)
    assert not policy.must_look("What is 3 plus 4?", ws)
    assert policy.must_look("Which port do we run on?", ws)  # "we": the people of this folder
    assert policy.must_look("What is the current version?", ws)  # a project's own property


def test_a_change_task_ends_once_its_change_is_made(ws: Workspace) -> None:
    task = "Append the line '- milk' to notes.txt."
    replies = [call_text("read_file", path="notes.txt"), call_text("write_file", path="notes.txt", content="- milk", append=True), "Added the line to notes.txt."]
    agent, fake = _agent(ws, replies)
    agent.config.report_changes, agent.approver = False, lambda *a: (True, "")  # the model writes the answer
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED and r.answer == "Added the line to notes.txt."
    assert [len(rec.calls) for rec in r.records] == [1, 1, 0]  # the forced read, the append, the answer
    assert (ws.root / "notes.txt").read_text() == "Launch code: 4821\n- milk"
    asked = fake.requests[-1]
    assert asked[-1].content.startswith("Question: " + task) and len(asked) == 2  # the evidence alone
    assert fake.tools_seen[-1] == []  # written without the tool list


def test_a_change_made_is_reported_in_the_tools_own_words(ws: Workspace) -> None:
    task = "Append the line '- milk' to notes.txt."
    replies = [call_text("read_file", path="notes.txt"), call_text("write_file", path="notes.txt", content="- milk", append=True)]
    agent, fake = _agent(ws, replies)
    agent.approver = lambda *a: (True, "")
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED and r.answer == "Done: appended to 'notes.txt' (2 lines now): '- milk'"
    assert len(fake.requests) == 2  # no model call for the answer
    h = _history((ToolCall("w", "write_file", {"path": "notes.txt", "content": "- milk"}), "appended to 'notes.txt' (2 lines now)"))
    assert policy.change_report(task, h) == "Done: appended to 'notes.txt' (2 lines now): '- milk'"
    told = "Append the line '- milk' to notes.txt and tell me how many lines it has."
    assert policy.change_report(told, h) is None  # asks to be told too: the model answers
    failed = _history((ToolCall("w", "write_file", {"path": "notes.txt"}), "error (denied): not approved"))
    assert policy.change_report(task, failed) is None  # nothing changed


def test_a_copy_is_done_only_once_the_new_file_exists(ws: Workspace) -> None:
    assert not policy.change_done("Copy the port from config.cfg into a new file port.txt.", {"config.cfg"}, ["port.txt"])
    assert policy.change_done("Copy the port from config.cfg into a new file port.txt.", {"port.txt"}, ["port.txt"])
    assert not policy.change_done("What is the port in config.cfg?", {"config.cfg"}, [])  # a question changes nothing


def test_a_settings_name_alone_is_not_offered_as_old_text() -> None:
    text = 'name = "a"\nworkers = 4\n'
    assert "workers" not in (policy.spans(text, path="conf/app.cfg") or [])
    assert "workers = 4" in (policy.spans(text, path="conf/app.cfg") or [])
    assert "workers" in (policy.spans(text, path="src/app.py") or [])  # code: a name is what a rename changes


@pytest.mark.parametrize(
    "old, new, written",
    [
        ("workers = 4", "workers=10", "workers = 10"),  # the line's own spacing
        ("port = 8080", "port = 6324", "port = 6324"),
        ("port = 8080", "port   =  6324", "port = 6324"),
        ("workers = 4", "10", "workers = 10"),  # the value alone
        ("port: 80", "port: 90", "port: 90"),
        ("x = 1", "y = 2", "y = 2"),  # another name: as written
        ("timeout = 30", "timeout 274", "timeout = 274"),  # the '=' left out
        ("workers = 4", "worker = 22", "workers = 22"),  # a slip of one letter
        ("port = 80", "sort = 90", "sort = 90"),  # a short name: a slip is not told from a rename
        ("log_level = info", "log_level debug trace", "log_level = debug trace"),
    ],
)
def test_an_edit_of_a_settings_line_keeps_its_style(tmp_path: Path, old: str, new: str, written: str) -> None:
    from localagent.tools.builtin import setting_new

    assert setting_new(old, new) == written


@pytest.mark.parametrize(
    "task, computes",
    [
        ("What is the total of apples in a.txt and b.txt?", True),
        ("I need the overall number of crates, counting both a.txt and b.txt. How many is that?", True),  # test10's
        ("How is written 'lamp' when you read it from the end?", True),
        ("Read the last line from the end of notes.txt.", False),
        ("Which is larger, the chairs in a.txt or b.txt?", True),
        ("What is 17 plus 25?", True),
        ("Spell 'lamp' backwards.", True),
        ("Give me 'lamp' spelled from the last letter to the first.", True),
        ("Add 12 and 30 together, please.", True),
        ("What is the launch code in notes.txt?", False),
        ("Add the line 'total: 4' to notes.txt.", False),  # a change, not a question
        ("Which file has the fewest lines, at least as counted by wc?", True),
        ("Write a long story, at least five paragraphs, about a lighthouse keeper.", False),
        ("Say at most three words about notes.txt.", False),
        ("How many apples are there in a.txt and b.txt together?", True),
        ("Which of a.txt and b.txt has more chairs, and how many?", True),
        ("Read a.txt and b.txt together.", False),
        ("Tell me more about notes.txt.", False),
        ("what's 30 and 12?", True),
        ("How much do 30 and 12 make?", True),
        ("Write 'lamp' from its last letter to the first.", True),
        ("What is in notes.txt and docs/setup.md?", False),
        ("How many chairs are there across a.txt and b.txt?", True),
        ("How many bottles do a.txt and b.txt have between them?", True),
    ],
)
def test_a_question_that_asks_for_something_worked_out(task: str, computes: bool) -> None:
    assert policy.computes(task) is computes


@pytest.mark.parametrize(
    "task, asks",
    [
        ("Which file in docs mentions the zeppelin?", True),
        ("In ops, which file has tangerine in it?", True),
        ("Name the file in ops where volcano appears.", True),
        ("Which file includes the word marmalade?", True),
        ("Which document in data brings up glacier?", True),
        ("Point me to the file in notes that names glacier.", True),
        ("tangerine is written in one of the files in records. Which file?", True),
        ("Go through docs and name the file that mentions glacier.", True),
        ("Look in docs and tell me the file with glacier in it.", True),
        ("Which file under docs has glacier show up in it?", True),
        ("Which file in docs is the word glacier used in?", True),
        ("Can you figure out which file under docs has volcano written in it?", True),
        ("tangerine - which file in info is that in?", True),
        ("grep admin for marmalade and tell me which file has it", True),
        ("One of the files in docs refers to volcano. Which one?", True),
        ("Is there a file in data that mentions marmalade? Tell me its name.", True),
        ("The deadline is in one of the files in ops, but I don't remember which. What is it?", False),  # the value
        ("Where did I put it... the launch code is in some file under admin. What does it say?", False),
        ("Which file is the largest in docs?", False),
        ("What does notes.txt say?", False),
    ],
)
def test_a_question_that_asks_which_file_holds_a_word(task: str, asks: bool) -> None:
    assert policy.asks_which_file(task) is asks


def test_only_a_task_that_asks_for_something_worked_out_may_call_calculate(ws: Workspace) -> None:
    story = "Write a long story, at least five paragraphs, about a lighthouse keeper."
    agent, fake = _agent(ws, ["Once upon a time.", "It is 42."])
    agent.run(story)
    agent.run("What is 17 plus 25?")
    assert "calculate" not in (fake.options[0].grammar or "x") and "calculate" in (fake.options[1].grammar or "")
    assert [t["function"]["name"] for t in fake.tools_seen[0]] == [t["function"]["name"] for t in fake.tools_seen[1]]  # the prompt is the same


def test_a_sum_is_calculated_after_the_reads_and_answered_from_its_result(ws: Workspace) -> None:
    (ws.root / "b.txt").write_text("Launch code: 1000\n")
    task = "What is the total of the launch codes in notes.txt and b.txt?"
    replies = [call_text("read_file", path="notes.txt"), call_text("read_file", path="b.txt"),
               call_text("calculate", expression="4821 + 1000"), "The total is 5821."]
    agent, fake = _agent(ws, replies)
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED and r.answer == "The total is 5821."
    assert [c.name for rec in r.records for c in rec.calls] == ["read_file", "read_file", "calculate"]
    assert fake.options[2].tool_choice == "calculate"  # forced once both files were read
    assert "4821 + 1000 = 5821" in fake.requests[-1][-1].content and fake.tools_seen[-1] == []


def test_no_calculation_is_forced_when_the_flag_is_off(ws: Workspace) -> None:
    fake = FakeBackend.scripted(["It is 42."])
    agent = Agent(fake, workspace_tools(ws), root=ws.root, config=AgentConfig(system_prompt="sys", calculate_when_asked=False))
    assert agent.run("What is 17 plus 25?").answer == "It is 42."


def test_an_answer_that_leaves_out_the_calculated_value_gets_the_calculation() -> None:
    call = ToolCall("c1", "calculate", {"expression": "max(63, 48)"})
    history = [Message("assistant", "", tool_calls=[call]), Message("tool", "max(63, 48) = 63", tool_call_id="c1")]
    found = policy.evidence(history)
    assert policy.with_calculation("South has more lamps.", found) == "South has more lamps. (max(63, 48) = 63)"
    assert policy.with_calculation("South has 63 lamps.", found) == "South has 63 lamps."
    assert policy.with_calculation("Nothing to add.", []) == "Nothing to add."
    assert "gives 63" in policy.answer_prompt("Which is larger?", history)


@pytest.mark.parametrize(
    "task, want",
    [
        ("What is the total of apples in a.txt and b.txt?", ["12 + 30"]),
        ("Which is larger, the apples in a.txt or b.txt?", ["max(12, 30)"]),
        ("Which has the fewest apples, a.txt or b.txt?", ["min(12, 30)"]),
        ("What do the apples in a.txt and b.txt come to?", ["12 + 30", "max(12, 30)", "min(12, 30)", "12 - 30", "12 * 30"]),
    ],
)
def test_calculate_is_offered_the_numbers_on_lines_that_name_the_tasks_words(task: str, want: list[str]) -> None:
    results = ["apples: 12\npears: 5\n[end of a.txt: 2 lines]", "pears: 7\napples: 30\n[end of b.txt: 2 lines]"]
    history = [Message("tool", r, tool_call_id=f"c{i}") for i, r in enumerate(results)]
    assert policy.expressions(task, history) == want


def test_calculate_is_offered_the_quoted_text_and_the_tasks_own_numbers() -> None:
    assert policy.expressions("Spell 'lamp' backwards.", []) == ["'lamp'[::-1]"]
    assert policy.expressions("What is 17 plus 25?", []) == ["17 + 25"]
    assert policy.expressions("How is the weather?", []) == []


def test_a_rename_replaces_every_occurrence(ws: Workspace) -> None:
    assert policy.edits_every("In src/worker.py, rename load to load_config.")
    assert policy.edits_every("Replace every 'a' in notes.txt with 'b'.")
    assert not policy.edits_every("Set the port in config.cfg to 9090.")
    assert policy.edits_every("The function calc in app/main.py should be called compute. Update all its call sites.")
    agent, _ = _agent(ws, [])
    c = agent._grammar(agent.tools.schemas(), agent._choice, task="Replace every 4821 in notes.txt with 1234.", read={"notes.txt"})
    assert c is not None and '-all ::= "true"' in c.text  # required, and true


def test_a_question_counting_files_of_a_type_names_the_glob_and_folder(ws: Workspace) -> None:
    assert policy.counted_files("How many .md files are in the docs folder?", ws) == (["*.md"], ["docs"])
    assert policy.counted_files("Count the .cfg files.", ws) == (["*.cfg"], ["."])
    assert policy.counted_files("Tally up the .md files in docs for me.", ws) == (["*.md"], ["docs"])
    assert policy.counted_files("# of .md files in docs?", ws) == (["*.md"], ["docs"])
    assert policy.counted_files("How many lines does notes.txt have?", ws) is None  # a file's lines, not files
    assert policy.counted_files("How many files are in docs?", ws) is None  # no type named: list_dir counts
    assert policy.counted_files("Create two .md files in docs.", ws) is None  # not a question


def test_a_count_of_files_of_a_type_calls_find_files_for_it_first(ws: Workspace) -> None:
    (ws.root / "docs" / "b.md").write_text("b\n")
    (ws.root / "docs" / "c.txt").write_text("c\n")
    agent, fake = _agent(ws, [call_text("find_files", pattern="*.md", path="docs"), "There are 2 .md files in docs."])
    r = agent.run("How many .md files does the docs folder hold?")
    assert [c.name for rec in r.records for c in rec.calls] == ["find_files"]
    grammar = fake.options[0].grammar or ""
    assert '\\"*.md\\"' in grammar and '\\"docs\\"' in grammar and "list_dir" not in grammar
    assert "2 files" in r.records[0].results[0].content and r.answer == "There are 2 .md files in docs."
    assert '\\"*.md\\"' not in (fake.options[1].grammar or "")  # not forced again once it ran


@pytest.mark.parametrize(
    "task, word",
    [
        ("Fix the typo 'recieve' in notes/setup.md: it should be 'receive'.", "receive"),
        ("In notes/setup.md, 'teh' is misspelt; correct it to 'the'.", "the"),
        ("Rename the function calc to compute everywhere in app/worker.py.", "compute"),
        ("In lib/worker.py, rename emit to publish (the definition and every use).", "publish"),
        ("Replace 'hello world' with 'goodbye world' in notes.txt.", None),  # not one word: free
        ("Change the port in config.cfg to 9090.", None),  # a setting: its own rule (setting_new)
        ("What is 'teh' changed to in notes/setup.md?", None),  # a question
        ("fix 'recieve' -> 'receive' in notes/setup.md", "receive"),
        ("Refactor app/jobs.py: calc becomes compute, including every call.", "compute"),
        ("Modify config.cfg so the log_level becomes debug.", None),  # a setting, not a rename
        ("emit -> publish in app/jobs.py, everywhere please", "publish"),
        ("The function calc in app/main.py should be called compute. Update all its call sites.", "compute"),
        ("I'd like calc in src/worker.py to be called compute from now on, definition and all calls.", "compute"),
        ("Write it into a new file called answer.txt.", None),  # 'called' names a file here
        ("Could you rename emit to publish in app/main.py, including every call to it?", "publish"),  # test10's
    ],
)
def test_the_one_word_an_edit_gives_as_its_new_text(task: str, word: str | None) -> None:
    assert policy.new_word(task) == word


def test_an_edit_that_gives_its_new_word_replaces_a_word_with_it(ws: Workspace) -> None:
    (ws.root / "app.py").write_text("def calc(text):\n    return calc_all(text)\n")
    agent, _ = _agent(ws, [])
    task = "Rename the function calc to compute everywhere in app.py."
    c = agent._grammar(agent.tools.schemas(), agent._choice, task=task, read={"app.py"})
    assert c is not None and '\\"compute\\"' in c.text and '\\"calc\\"' in c.text
    assert "compute everywhere" not in c.text and "def calc(text):" not in c.text  # a word for a word


def test_a_rename_in_a_file_that_was_read_is_an_edit_not_a_write(ws: Workspace) -> None:
    (ws.root / "app.py").write_text("def emit(text):\n    return emit_all(text)\n")
    agent, _ = _agent(ws, [])
    task = "Rename the function emit to publish everywhere in app.py."
    read = agent._grammar(agent.tools.schemas(), agent._choice, task=task, read={"app.py"})
    unread = agent._grammar(agent.tools.schemas(), agent._choice, task=task)
    assert read is not None and "write_file" not in read.text and "edit_file" in read.text
    assert unread is not None and "write_file" in unread.text  # not read yet: nothing known to keep
    append = agent._grammar(agent.tools.schemas(), agent._choice, task="Append the line 'x' to app.py.", read={"app.py"})
    assert append is not None and "write_file" in append.text


@pytest.mark.parametrize(
    "task, found",
    [
        ("Is CHANGELOG.md here? Tell me what it says if it is.", (["CHANGELOG.md"], ["."])),
        ("Print the contents of docs/roadmap.md, or say it is missing.", (["roadmap.md"], ["."])),
        ("Does LICENSE exist? If yes, what does it contain?", (["LICENSE"], ["."])),
        ("What does notes.txt say?", None),  # there
        ("What does notse.txt say?", None),  # a misspelling of a file there: read that one
        ("What does NOTES.TXT say?", None),  # another case
        ("Create CHANGELOG.md with the line 'v1'.", None),  # a file to create
        ("How many .png files are in docs?", (["*.png"], ["docs"])),
    ],
)
def test_a_question_about_a_missing_file_or_a_count_finds_first(ws: Workspace, task: str, found: object) -> None:
    assert policy.finds_first(task, ws) == found


def test_a_question_about_a_missing_file_looks_for_it_by_name_first(ws: Workspace) -> None:
    agent, fake = _agent(ws, [call_text("find_files", pattern="CHANGELOG.md", path="."), "There is no CHANGELOG.md."])
    r = agent.run("Is there a CHANGELOG.md? If so, what is in it?")
    grammar = fake.options[0].grammar or ""
    assert '\\"CHANGELOG.md\\"' in grammar and "read_file" not in grammar
    assert r.records[0].results[0].content.startswith("no files named like 'CHANGELOG.md'")


@pytest.mark.parametrize(
    "request_, n",
    [
        ("What's the weather in Seoul, Madrid and Dublin?", 3),
        ("Get the prices of Tesla, Intel, Microsoft and Apple.", 4),
        ("How much is 300 JPY in CHF? Also, what is Amazon trading at?", 2),
        ('Text +61412345678 "Moved to Friday, and later" and set a timer.', 2),  # quoted text is one value
        ("Convert 1,500 USD to CAD.", 1),  # a thousands separator is not a list
        ("What is the capital of France?", 1),
        ("Read a.txt & b.txt, then c.txt", 3),
        (", ".join(f"city{i}" for i in range(20)), policy.MAX_CALLS),
    ],
)
def test_the_calls_a_request_implies(request_: str, n: int) -> None:
    assert policy.calls_implied(request_) == n


def test_the_implied_count_holds_for_the_turn_that_answers_the_request_only() -> None:
    ask = [Message("user", "Read a.txt and b.txt")]
    assert policy.calls_implied_now("Read a.txt and b.txt", ask) == 2
    after = ask + [Message("assistant", "", [ToolCall("1", "read_file", {"path": "a.txt"})]), Message("tool", "x", tool_call_id="1")]
    assert policy.calls_implied_now("Read a.txt and b.txt", after) == 1


def test_answered_calls_are_those_with_a_result_that_is_not_an_error() -> None:
    h = [
        Message("assistant", "", [ToolCall("1", "read_file", {"path": "a.txt"}), ToolCall("2", "read_file", {"path": "b.txt"})]),
        Message("tool", "hello", tool_call_id="1"),
        Message("tool", "error (not_found): b.txt", tool_call_id="2"),
    ]
    assert policy.answered(h) == {ToolCall("1", "read_file", {"path": "a.txt"}).canonical()}


def test_parts_left_are_those_no_call_names_yet() -> None:
    coffee = policy.request_parts("Get me a flat white, size medium, whole milk.")
    assert policy.parts_left(coffee, [{"drink": "flat white", "size": "medium", "milk": "whole"}]) == 0
    cities = policy.request_parts("What's the weather in Seoul, Madrid and Dublin?")
    assert policy.parts_left(cities, [{"city": "Seoul", "unit": "celsius"}]) == 2
    assert policy.parts_left(cities, [{"city": "Seoul"}, {"city": "Madrid"}, {"city": "Dublin"}]) == 0
    # A spaced "/" joins parts; a path's does not.
    assert policy.request_parts("Toronto weather / Athens air quality / Paris time") == ["Toronto weather", "Athens air quality", "Paris time"]
    assert policy.request_parts("read docs/a.md") == ["read docs/a.md"]
    # A value names a part where a word starts with it; a lone digit is no part's start inside a number.
    assert policy.parts_left(["set cooling mode", "target 18 °C"], [{"mode": "cool", "target": 18.0}]) == 0
    assert policy.parts_left(["wait 15 minutes"], [{"minutes": 5}]) == 1


def test_a_call_names_the_parts_most_of_its_values_name_not_every_part_sharing_one() -> None:
    # Parts sharing a value (a base currency, a leg's city) are not all named by the first call.
    pairs = policy.request_parts("Get me the exchange rates of USD to AUD and USD to CAD.")
    usd_aud, usd_cad = {"base": "USD", "target": "AUD"}, {"base": "USD", "target": "CAD"}
    assert policy.named(pairs, [usd_aud]) == [True, False]
    assert policy.parts_left(pairs, [usd_aud, usd_cad]) == 0
    legs = policy.request_parts("Driving distance from New York City to Los Angeles, then from Los Angeles to Miami")
    assert policy.named(legs, [{"origin": "New York City", "destination": "Los Angeles"}]) == [True, False]
    # A value only one part holds names it beside the best: an email's body.
    mail = policy.request_parts("Email bob@example.com with subject 'Hi' and body 'See you at 5'")
    assert policy.parts_left(mail, [{"to": "bob@example.com", "subject": "Hi", "body": "See you at 5"}]) == 0


def test_a_call_naming_nothing_new_by_its_values_names_the_part_its_tool_serves() -> None:
    parts = ("Find the sales growth rate for company XYZ for the last 3 years", "the interest coverage ratio for the same duration.")
    serving = ("sales_growth", "interest_coverage")
    args = [{"company": "XYZ", "years": 3}, {"company": "XYZ", "years": 3}]
    assert policy.named(parts, args, serving, ["sales_growth", "interest_coverage"]) == [True, True]
    assert policy.named(parts, args, serving, ["sales_growth", "sales_growth"]) == [True, False]  # the same tool again
    assert policy.named(parts, args) == [True, False]  # tools unknown: values only
    made_up = [{"company": "XYZ", "years": 3}, {"company": "XYZ", "years": 10}]  # 10: not the request's
    assert policy.named(parts, made_up, serving, ["sales_growth", "interest_coverage"]) == [True, False]


def test_a_request_wholly_in_quotes_is_read_without_them() -> None:
    request = '"Could you help me with two things? First, the weather in Oslo. Second, the time in Rome."'
    assert policy.unwrapped(request) == request[1:-1]
    assert policy.call_plan(request, [Message("user", request)], _city_tools()).implied > 1
    assert not policy.answers_itself('"What is 12 times 7? And the weather in Oslo?"', _city_tools())  # asks a tool too
    # A request that quotes text and says something outside the quotes is as it is.
    assert policy.unwrapped('Translate "good night" into French') == 'Translate "good night" into French'
    assert policy.unwrapped('"a" and "b"') == '"a" and "b"'


def test_a_range_is_one_part() -> None:
    assert policy.request_parts("Find all primes between 50 and 150. Then get the fibonacci series up to 150.") == [
        "Find all primes between 50 and 150", "get the fibonacci series up to 150."]
    assert len(policy.request_parts("the distance between Paris and Rome and between Oslo and Bergen")) == 2


def test_a_value_names_a_part_by_a_word_of_its_own_or_as_a_code() -> None:
    assert policy.names("Oslo, Norway", "rainy or what in Oslo")  # a word of it starts one of the part
    assert not policy.names("notes.txt", "a.txt")  # "notes.txt" is one word: its "txt" names nothing
    assert not policy.names("Running late, start without me", "start a 15-minute timer")  # a sentence, by its words
    for code, company in [("NFLX", "Netflix"), ("AAPL", "Apple"), ("INTC", "Intel"), ("MSFT", "Microsoft"), ("NVDA", "Nvidia")]:
        assert policy.names(code, f"how is {company} trading"), code
    assert not policy.names("GOOGL", "how are Netflix and Nvidia trading")
    assert not policy.names("CAD", "can you convert it")  # a code of three needs all its letters
    assert not policy.names("aapl", "how is Apple doing")  # a code is written in capitals
    # Rome + Oslo: "+" between spaces joins two parts, not a phone number's.
    assert policy.request_parts("weather now in Rome + Oslo forecast") == ["weather now in Rome", "Oslo forecast"]
    assert policy.calls_implied("text +4915112345678 now") == 1


def test_an_optional_text_the_request_does_not_give_is_left_out() -> None:
    timer = {"type": "function", "function": {"name": "set_timer", "parameters": {"type": "object", "properties": {
        "minutes": {"type": "integer"}, "label": {"type": "string"}}, "required": ["minutes"]}}}
    sms = {"type": "function", "function": {"name": "send_sms", "parameters": {"type": "object", "properties": {
        "phone_number": {"type": "string"}, "message": {"type": "string"}, "priority": {"type": "string", "enum": ["low", "high"]}},
        "required": ["phone_number", "message"]}}}
    tools = [timer, sms]
    assert policy.optional_texts(tools) == {("set_timer", "label")}  # not an enum, not a required text
    folder = {"type": "function", "function": {"name": "list_dir", "parameters": {"type": "object", "properties": {
        "path": {"type": "string", "default": "."}}}}}
    assert not policy.optional_texts([folder])  # a default: the value may come from the folder shown

    def kept(request: str, *calls: tuple[str, dict[str, object]]) -> list[dict[str, object]]:
        return policy.unasked(request, list(calls), tools)

    assert kept("Set a timer for 10 minutes.", ("set_timer", {"minutes": 10, "label": "Key Timer"})) == [{"minutes": 10}]
    # Given word for word, it stays; quoted or not.
    assert kept('Set a 10 minute timer called "pasta".', ("set_timer", {"minutes": 10, "label": "pasta"}))[0]["label"] == "pasta"
    assert kept("Start a tea timer for 4 minutes, label it green tea.", ("set_timer", {"minutes": 4, "label": "green tea"}))[0]["label"] == "green tea"
    # In the request, but telling another parameter again: not a label.
    assert kept("Start a countdown of twelve minutes.", ("set_timer", {"minutes": 12, "label": "Countdown of twelve minutes"})) == [{"minutes": 12}]
    # In the request, but another argument of the turn: the SMS sent beside it.
    sent = ("send_sms", {"phone_number": "+331", "message": "Dinner is at eight."})
    assert kept('Text "Dinner is at eight" to +331 and start a 5 minute timer.', sent, ("set_timer", {"minutes": 5, "label": "Dinner is at eight."})) == [
        sent[1], {"minutes": 5}]
    # Nor does an optional text name a part of the request: the label is no SMS sent.
    optional = policy.optional_texts(tools)
    parts = policy.request_parts('Start a 5 minute timer and text "Dinner is at eight" to +331.')
    labelled = policy.naming([("set_timer", {"minutes": 5, "label": "Dinner is at eight"})], optional)
    assert labelled == [{"minutes": 5}] and policy.parts_left(parts, labelled) == 1
    # Required texts and enums are never left out.
    assert kept("Set a timer.", ("send_sms", {"phone_number": "+1", "message": "hi", "priority": "high"})) == [
        {"phone_number": "+1", "message": "hi", "priority": "high"}]


def test_a_part_keeps_its_quoted_text_and_underscores_read_as_spaces() -> None:
    ticket = policy.request_parts('Open a ticket: "Disk almost full", severity medium, component frontend.')
    assert len(ticket) == 3 and "Disk almost full" in ticket[0]
    args = {"title": "Disk almost full", "severity": "medium", "component": "frontend"}
    assert policy.parts_left(ticket, [args]) == 0
    mail = policy.request_parts('Email goran@example.com with the subject "Report, final" and the text "It is fixed now".')
    assert len(mail) == 2  # the comma inside the quote splits nothing
    assert policy.parts_left(mail, [{"to": ["goran@example.com"], "subject": "Report, final", "body": "It is fixed now"}]) == 0
    assert policy.parts_left(mail, [{"to": ["goran@example.com"], "subject": "Report, final", "body": ""}]) == 1
    light = policy.request_parts("Switch the living room lights on, colour blue.")
    assert policy.parts_left(light, [{"room": "living_room", "on": True, "color": "blue"}]) == 0
    assert policy.parts_left(light, [{"room": "kitchen", "on": True, "color": "blue"}]) == 1
    # A part that is only a quote is no part of its own, as before.
    assert policy.calls_implied('Search for "a, b" and "c"') == 1


def test_a_part_points_to_the_one_tool_sharing_most_of_its_words() -> None:
    tools = [
        {"type": "function", "function": {"name": n, "description": d, "parameters": {"type": "object", "properties": {"city": {}}}}}
        for n, d in [("get_weather", "Current weather in a city."), ("get_air_quality", "Air quality in a city."),
                     ("get_time", "The local time in a city.")]
    ]
    plan = policy.call_plan("Get the weather in Oslo, the air quality in Lima and the local time in Rome.",
                            [Message("user", "...")], tools)
    assert plan.implied == 3 and plan.tools == ("get_weather", "get_air_quality", "get_time")
    # A part that names no tool (or ties) points to none: the last call's tool goes on.
    assert policy.part_tool("and docs/install.md", tools) == ""
    assert policy.part_tool("the city", tools) == ""  # all three share "city"
    # Before any part is named, the k-th call serves the k-th part.
    assert policy.next_tool(("a", "b"), ("get_weather", policy.LAST), [{}], ["get_weather"]) == "get_weather"
    assert policy.next_tool(("a", "b"), ("get_weather", "get_time"), [{}], ["get_weather"]) == "get_time"
    assert policy.next_tool((), (), [], []) == ""
    # One call implied, or a turn after a tool result: no parts, no tools.
    assert policy.call_plan("Get the weather in Oslo.", [Message("user", "...")], tools) == policy.CallPlan(1)
    after = [Message("user", "a, b and c"), Message("tool", "x")]
    assert policy.call_plan("a, b and c", after, tools).implied == 1


def test_a_value_copied_wrong_from_the_request_is_copied_again() -> None:
    def copied(request: str, value: str) -> str:
        return policy.as_given(request, [("t", {"v": value})], [])[0]["v"]

    # A prefix gained: "/", ".", or another path's folder; a folder lost.
    assert copied("List the folder data/raw.", "/data/raw") == "data/raw"
    assert copied("Search src for TODO", ".src") == "src"
    assert copied("Open ../tests/test_app.py and data/users.csv.", "../data/users.csv") == "data/users.csv"
    assert copied("Show me ../data/users.csv", "data/users.csv") == "../data/users.csv"
    # A few characters in a long value: the nearest, where one is nearest.
    assert copied('Text +61412345678 "hi"', "+161412345678") == "+61412345678"
    assert copied("Invite dara@example.com and hana@example.com.", "data@example.com") == "dara@example.com"
    # Not a miscopy: a value of its own, a path made of the request's words, one the request holds.
    assert copied('Text +61412345678 or 0412345678 "hi"', "+15551234567") == "+61412345678"  # the one with "+"
    assert copied('Text +61412345678 or +61412345679 "hi"', "+15551234567") == "+15551234567"  # two: which is not known
    assert copied("Read notes.md in docs.", "docs/notes.md") == "docs/notes.md"
    assert copied("Read hosts in /etc.", "/etc/hosts") == "/etc/hosts"
    assert copied("Move ../shared/notes.md to notes.md.", "notes.md") == "notes.md"
    assert copied("Weather in Tokyo", "Tokyo, Japan") == "Tokyo, Japan"
    # Equally near two words: left as written.
    assert copied("Compare a1.txt and a3.txt", "a2.txt") == "a2.txt"


def test_a_list_item_and_an_enum_choice_are_held_to_the_request() -> None:
    phones = {"type": "array", "items": {"type": "object", "properties": {
        "label": {"type": "string", "enum": ["mobile", "home", "work"]}, "number": {"type": "string"}}}}
    contact = {"type": "function", "function": {"name": "create_contact", "parameters": {"type": "object", "properties": {
        "name": {"type": "string"}, "phones": phones, "cc": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}, "default": ["friends"]}}, "required": ["name"]}}}

    def held(request: str, args: dict[str, object]) -> dict[str, object]:
        return policy.as_given(request, [("create_contact", args)], [contact])[0]

    made = {"name": "Chen Wei", "phones": [{"label": "mobile", "number": "+33612345678"}, {"label": "home", "number": "1234567890"}]}
    # The made-up number goes, and the label is the one the request names.
    assert held("Add Chen Wei, work number +33612345678.", made)["phones"] == [{"label": "work", "number": "+33612345678"}]
    # Two labels named: which is whose cannot be told, so the label stays.
    assert held("Add Chen Wei, home number +33612345678, tag work.", made)["phones"] == [{"label": "mobile", "number": "+33612345678"}]
    # No item given at all: nothing to tell them apart by, all stay.
    assert len(held("Add Chen Wei with two numbers.", made)["phones"]) == 2
    # An empty optional list is left out, unless the schema gives a default.
    assert held("Add Chen Wei.", {"name": "Chen Wei", "cc": [], "tags": []}) == {"name": "Chen Wei", "tags": []}


def _city_tools() -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": n, "description": d, "parameters": {"type": "object", "properties": {"city": {}}}}}
        for n, d in [("get_weather", "Get the current weather in a city."), ("get_forecast", "Get the weather forecast for a city."),
                     ("get_air_quality", "Get the current air quality index of a city."), ("get_time", "Get the local time in a city.")]
    ]


def _served(request: str, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The tool next_tool gives each call after the first, the calls before it as given."""
    plan = policy.call_plan(request, [Message("user", request)], _city_tools())
    return [policy.next_tool(plan.parts, plan.tools, [a for _, a in calls[:k]], [n for n, _ in calls[:k]]) for k in range(1, len(calls))]


def test_the_next_call_serves_the_first_part_no_call_names_yet() -> None:
    three = [("get_weather", {"city": "Budapest"}), ("get_air_quality", {"city": "Toronto"}), ("get_time", {"city": "Oslo"})]
    # A lead-in is served by no call; the parts after the first one named are.
    assert _served("I'd like three bits of info, please: the weather in Budapest, the air quality in Toronto, "
                   "and what time it is in Oslo.", three) == ["get_air_quality", "get_time"]
    # A value first, its tool in the part after: "for Toronto, the air quality".
    assert _served("For Budapest, give me the weather; for Toronto, the air quality; and for Oslo, the local time.",
                   three) == ["get_air_quality", "get_time"]
    # A word of the tool's name counts twice, and a code in capitals may be the tool's initials.
    assert _served("weather in Budapest, AQI for Toronto, and the time in Oslo? thx", three) == ["get_air_quality", "get_time"]
    # A short part naming no tool goes on with the last call's tool; a sentence of its own is the model's choice.
    cities = [("get_weather", {"city": c}) for c in ("Budapest", "Toronto", "Oslo")]
    assert _served("Get the weather in Budapest, Toronto and Oslo.", cities) == ["get_weather", "get_weather"]
    assert _served("Get the weather in Budapest. Also, what is Toronto like?", cities[:2]) == [""]
    # A word that only orders the request is no part to serve; a clause of its own with
    # nothing specific in it goes on with the last call's tool.
    request = "First, the weather in Budapest? Second, can you tell me about each one?"
    parts = tuple(policy.request_parts(request))
    assert policy.serving_tools(request, parts, _city_tools()) == (policy.NONE, "get_weather", policy.NONE, policy.LAST)
    # A call that named a part already served goes on to the next one left.
    assert _served("the weather in Budapest, the air quality in Toronto and the time in Oslo", [three[0], three[0]]) == ["get_air_quality"]


def test_after_a_lead_in_the_kth_call_serves_the_kth_part_that_names_a_tool() -> None:
    # "Lisboa" names no part: the next call is still the second part's tool, not the first's again.
    three = [("get_weather", {"city": "Lisboa"}), ("get_air_quality", {"city": "Paris"}), ("get_time", {"city": "Lima"})]
    assert _served("I'm juggling plans in a few places today, so: the weather in Lisbon, the air quality in Paris, "
                   "and the local time in Lima?", three) == ["get_air_quality", "get_time"]
    # A tail that only counts the parts is served by no call.
    parts = tuple(policy.request_parts("read a.md, b.md and c.md, all of them"))
    assert policy.serving_tools("", parts, _city_tools())[-1] == policy.NONE


def test_a_next_call_is_not_to_start_a_value_another_part_or_an_example_gives() -> None:
    def ruled_out(request: str, calls: list[tuple[str, dict[str, Any]]], tool: str, key: str, tools: Any = None) -> list[str]:
        plan = policy.call_plan(request, [Message("user", request)], tools or _city_tools())
        return policy.excluded(plan, [a for _, a in calls], [n for n, _ in calls], tool, key)

    madrid = [("get_weather", {"city": "Madrid"})]
    # A tool new to the turn, its part holding a name no call gives: not the other part's city.
    assert ruled_out("Madrid weather rn, Lisbon forecast 7 days", madrid, "get_forecast", "city") == ["Madrid"]
    assert ruled_out("weather Stockholm? air Tokyo? time Seoul?", [("get_weather", {"city": "Stockholm"}), ("get_air_quality", {"city": "Tokyo"})],
                     "get_time", "city") == ["Stockholm", "Tokyo"]
    # ... nor a name a part not served yet holds (Paris, for Athens's air).
    assert ruled_out("Toronto weather / Athens air quality / Paris time now", [("get_weather", {"city": "Toronto"})],
                     "get_air_quality", "city") == ["Toronto", "Paris"]
    # Not where the part holds no name of its own ("the same city"), nor the value names it, nor the tool was called.
    assert ruled_out("Madrid weather rn, and the forecast for the same city", madrid, "get_forecast", "city") == []
    assert ruled_out("Weather in Madrid, and the Lisbon forecast for the same week", madrid, "get_forecast", "city") == []  # points back
    assert ruled_out("Weather in Madrid. What is the forecast for Madrid?", madrid, "get_forecast", "city") == []
    assert ruled_out("Weather in Madrid and in Lisbon", madrid, "get_weather", "city") == []
    # A sentence's first word is no name: "Could" holds none.
    assert ruled_out("Weather in Madrid. Could you get the forecast too?", madrid, "get_forecast", "city") == []
    # An example of a code parameter no part names ("e.g. 'AAPL'" for Netflix); not where one does (Apple).
    stock = [{"type": "function", "function": {"name": "get_stock_price", "description": "Get a stock's price.", "parameters": {
        "type": "object", "properties": {"symbol": {"type": "string", "description": "Ticker symbol, e.g. 'AAPL'."}}}}}]
    assert ruled_out("Convert 200 JPY to CHF and also the share price of Netflix", [], "get_stock_price", "symbol", stock) == ["AAPL"]
    assert ruled_out("Share prices of Netflix and Apple", [], "get_stock_price", "symbol", stock) == []


def test_a_first_turn_call_holding_a_name_the_request_does_not_say_holds_the_answer() -> None:
    tools = _city_tools()

    def answer(request: str, args: dict[str, Any], exists: Any = None) -> bool:
        return policy.answer_in_call(request, [("get_weather", args)], tools, exists)

    assert answer("I'm stuck on a clue: the capital city of Ireland?", {"city": "Dublin", "unit": "celsius"})
    assert answer('"Which city is the capital of Peru?"', {"city": "Lima Peru"}) is False  # names Peru
    # The request's own name, another spelling of it, its initials: no answer in them.
    assert not answer("Weather in Lisbon now?", {"city": "Lisboa"})
    assert not answer("weather in NYC?", {"city": "New York"})
    assert not answer("Convert 5 USD to EUR", {"from": "USD", "to": "EUR", "amount": 5})
    # A path of the folder is no answer made up.
    assert not answer("What builds this project?", {"path": "Makefile"}, lambda p: p == "Makefile")
    assert answer("What builds this project?", {"path": "Makefile"})
    # A name beside one the request says is inferred, not the answer.
    assert not policy.answer_in_call("The crime rate in San Francisco?", [("get_crime_rate", {"city": "San Francisco", "state": "California"})], tools)
    assert policy.answer_in_call("The capital of Ireland?", [("get_weather", {"city": "Dublin"}), ("get_weather", {"city": "Ireland"})], tools)
    # A choice the tool offers is no answer ("Comedy" for "comic movies").
    comedy = {"type": "function", "function": {"name": "find_movies", "parameters": {"type": "object", "properties": {
        "genre": {"type": "string", "enum": ["Comedy", "Drama"]}}}}}
    assert not policy.answer_in_call("find me comic movies", [("find_movies", {"genre": "Comedy"})], [comedy])


@pytest.mark.parametrize("request_", [
    "Austria - capital city?", "What is the capital of Austria?", "Austria's capital is which city?", "Austria capital = ?",
    "Austria: capital?", "Do you happen to know the capital city of Austria?",
])
def test_a_call_for_a_name_the_request_asks_something_else_of_answers_another_question(request_: str) -> None:
    """Asked for Austria's capital, the model called get_weather for Austria: what the request
    asks of the name (its capital) is nothing the tool knows of."""
    assert policy.answer_in_call(request_, [("get_weather", {"city": "Austria"})], _city_tools())
    assert policy.asked_about(request_, "Austria") and "capital" in policy.asked_about(request_, "Austria")


@pytest.mark.parametrize("request_, calls", [
    ("Paris weather?", [("get_weather", {"city": "Paris"})]),  # what it asks is the tool's
    ("What's the weather of Tokyo?", [("get_weather", {"city": "Tokyo"})]),
    ("Berlin tomorrow?", [("get_forecast", {"city": "Berlin"})]),  # a time, not a thing
    ("the local time in each of Oslo and Lima", [("get_time", {"city": "Oslo"}), ("get_time", {"city": "Lima"})]),
    ("capital of Peru, and the weather in Lima", [("get_weather", {"city": "Peru"}), ("get_weather", {"city": "Lima"})]),
    ("turn on the kitchen light?", [("get_weather", {"city": "Kitchen"})]),  # a plain word, not a name
    ("the weather in Oslo, and Oslo's population", [("get_weather", {"city": "Oslo"})]),  # one mention asks the tool's
])
def test_a_call_for_a_name_asked_about_for_what_its_tool_knows_is_kept(request_: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
    assert not policy.answer_in_call(request_, calls, _city_tools())


def test_a_value_holding_the_whole_part_names_it() -> None:
    parts = policy.request_parts("Make a new file motd.txt with this one line: Hello, world!")
    assert len(parts) == 2  # the comma splits the line in two parts
    assert policy.parts_left(parts, [{"path": "motd.txt", "content": "Hello, world!"}]) == 0
    assert policy.parts_left(parts, [{"path": "motd.txt", "content": "Hello"}]) == 1
    # ... as a whole: "it" is not named by "edit".
    assert policy.parts_left(["it"], [{"mode": "edit"}]) == 1


def test_a_change_task_is_one_call_a_turn_and_a_question_may_hold_several(ws: Workspace) -> None:
    agent, fake = _agent(ws, [call_text("edit_file", path="config.cfg", old="port = 8080", new="port = 9090"), "Done."])
    agent.run("In config.cfg, make the port 9090.")
    assert fake.options[0].parallel is False and fake.options[0].more_calls is None
    agent, fake = _agent(ws, [call_text("read_file", path="notes.txt"), "4821"])
    agent.run("What is the launch code in notes.txt?")
    assert fake.options[0].parallel is True and fake.options[0].more_calls is not None


@pytest.mark.parametrize(
    "task, expression",
    [("quick one - what do you get when you add 88 and 17?", "88 + 17"), ("Add 4 to 9 for me.", "4 + 9")],
)
def test_adding_two_numbers_asks_for_a_sum(task: str, expression: str) -> None:
    assert policy.computes(task)
    assert policy.expressions(task, []) == [expression]


def test_a_file_created_with_the_text_the_task_gives_is_written_first(ws: Workspace) -> None:
    assert policy.writes_first("mk hello.txt w/ one line: Status: basalt ok", ws)
    assert not policy.writes_first("Create hello.txt listing the files in docs.", ws)  # no text given: look first
    assert not policy.writes_first("Copy the launch code of notes.txt into a new file code.txt.", ws)  # read the source
    assert not policy.writes_first("What does hello.txt say: hi?", ws)  # a question


def test_a_file_to_create_holds_the_one_text_the_task_quotes() -> None:
    task = "can you make me a file at notes/greeting.txt that just contains 'Welcome to moonshot.'?"
    assert policy.content_choices(task, [], creates=True) == ["Welcome to moonshot."]
    assert policy.content_choices(task, []) is None  # not a file to create: free
    assert policy.content_choices("Create notes/a.txt with 'x' and 'y'.", [], creates=True) is None
    assert policy.content_choices("Create notes/a.txt with this line: All systems go.", [], creates=True) == ["All systems go."]
    assert policy.content_choices("Create status.txt; it should just say Status: basalt ok", [], creates=True) == ["Status: basalt ok"]
    assert policy.content_choices("Copy the port of notes.txt into a new file 'port.txt'.", ["port: 80"], creates=True) == ["port: 80", "80"]
    arrow = "meeting room from docs/meeting.txt -> new file out/value.txt"  # a new file from one read: its pieces
    assert policy.content_choices(arrow, ["Meeting room: Cedar 3\n"], creates=True) == ["Meeting room: Cedar 3", "Cedar 3"]


def _read(path: str, content: str, cid: str = "a") -> tuple[ToolCall, str]:
    return ToolCall(cid, "read_file", {"path": path}), content


def test_an_answer_leaving_out_the_one_value_read_gets_its_line() -> None:
    task = "I stuck the launch code in some file inside ops, can you dig it out for me?"
    msgs = _history(_read("ops/launch.txt", "Do not share.\nLaunch code: 1605\n[end of ops/launch.txt: 2 lines]"))
    got = policy.finished_answer("The launch code was found in ops/launch.txt.", task, msgs)
    assert got == "The launch code was found in ops/launch.txt. (Launch code: 1605)"
    assert policy.finished_answer("It is 1605.", task, msgs) == "It is 1605."  # already there
    two = msgs + _history(_read("ops/old.txt", "Launch code: 7\n", "b"))[2:]
    assert policy.finished_answer("Found it.", task, two) == "Found it."  # two values: no guess
    change = "Change the launch code in ops/launch.txt to 7."
    assert policy.finished_answer("Done.", change, msgs) == "Done."  # a change's answer is its own
    stated = _history(_read("info/door.txt", "The door code is 7779.\nQuestions go to the team channel.\n"))
    task = "could you let me know what door code is recorded in info/door.txt?"
    assert policy.finished_answer("It is in info/door.txt.", task, stated) == "It is in info/door.txt. (The door code is 7779.)"


def test_an_answer_that_denies_nothing_after_finding_nothing_says_so() -> None:
    task = "can you show me docs/roadmap.md? if it isn't there just tell me"
    find = ToolCall("a", "find_files", {"pattern": "roadmap.md"})
    msgs = _history((find, "no files named like 'roadmap.md' under '.'"))
    assert policy.finished_answer("docs/roadmap.md", task, msgs) == "Not found: no files named like 'roadmap.md' under '.'"
    assert policy.finished_answer("There is no docs/roadmap.md.", task, msgs) == "There is no docs/roadmap.md."
    missing = _history(_read("docs/roadmap.md", "error (not_found): path 'docs/roadmap.md' not found"))
    assert policy.finished_answer("docs/roadmap.md", task, missing) == "Not found: path 'docs/roadmap.md' not found"


def test_a_model_that_writes_the_task_back_twice_is_answered_with_the_findings(ws: Workspace) -> None:
    task = "can you give me the launch code in notes.txt?"
    agent, _ = _agent(ws, [call_text("read_file", path="notes.txt"), task, task, task])
    agent.config.answer_once_read = agent.config.answer_when_covered = False
    r = agent.run(task)
    assert r.stop_reason is StopReason.ANSWERED
    assert r.answer.startswith("What was found:") and "Launch code: 4821" in r.answer


def _known_wordings(kind: bool = False) -> list[tuple[str, Any]]:
    """Every wording of the splits whose wordings were read (dev, test .. test9) and of the
    dev paraphrase files, with whether its kind is an edit (or, ``kind``, the kind)."""
    from localagent.evaluation.tasks.generate import generate
    from localagent.evaluation.tasks.suite import load_tasks

    tasks = [t for split in ("dev", "test", "test2", "test3", "test4", "test5", "test6", "test7", "test8", "test9") for t in generate(split)]
    results = Path(__file__).resolve().parent.parent / "evals" / "results"
    tasks += [t for f in ("devx", "devp", "devq", "devr") for t in load_tasks(results / f"tasks-{f}.jsonl")]
    return list({t.prompt: t.kind if kind else t.is_edit for t in tasks}.items())


def test_every_known_wording_sorts_change_from_question_as_its_kind_says() -> None:
    wordings = _known_wordings()
    assert len(wordings) > 1200
    apart = [w for w, edit in wordings if policy.wants_change(w) != edit or (edit and policy.asks_only(w))]
    assert apart == []


def test_every_known_wording_asks_which_file_exactly_when_its_kind_does() -> None:
    wordings = _known_wordings(kind=True)
    apart = [w for w, kind in wordings if policy.asks_which_file(w) != (kind == "search_many")]
    assert apart == []


def test_an_answer_leaving_out_what_the_asked_function_returns_is_the_code_s_value() -> None:
    src = 'def to_snake(v):\n    return "harbor-33"\n\n\ndef merge_maps(v):\n    if v:\n        return "juniper-39"\n\n\ndef clamp(v):\n    return "cedar-59"\n'
    assert policy.returned(src, "merge_maps") == ['"juniper-39"'] and policy.returned(src, "absent") == []
    task = "What value comes back from merge_maps in app/helpers.py?"
    msgs = _history(_read("app/helpers.py", src))
    assert policy.finished_answer("cedar-59", task, msgs) == 'merge_maps in app/helpers.py returns "juniper-39".'
    assert policy.finished_answer("It returns juniper-39.", task, msgs) == "It returns juniper-39."
    assert policy.finished_answer("to_snake, merge_maps, clamp", "Which functions does app/helpers.py define?", msgs) == "to_snake, merge_maps, clamp"


def test_a_question_about_the_project_that_its_searches_missed_reads_the_manifests(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nversion = "2.2.7"\n')
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "app.yaml").write_text("port: 8910\n")
    (tmp_path / "notes.txt").write_text("Nothing here.\n")
    ws, task = Workspace(tmp_path), "What release is this project on right now?"
    miss = lambda cid, w: (ToolCall(cid, "search", {"pattern": w}), f"no matches for {w!r} in '.' (3 text files searched)")  # noqa: E731
    one = _history(miss("a", "release"))
    assert policy.manifests_to_read(task, ws, one, set()) == []  # its next word is searched first
    two = _history(miss("a", "release"), miss("b", "right"))
    assert policy.manifests_to_read(task, ws, two, set()) == ["pyproject.toml", "conf/app.yaml"]
    assert policy.manifests_to_read(task, ws, two, {"pyproject.toml"}) == ["conf/app.yaml"]
    found = _history(miss("a", "release"), (ToolCall("b", "search", {"pattern": "right"}), "notes.txt:1: right"))
    assert policy.manifests_to_read(task, ws, found, set()) == []  # a search found something
    assert policy.manifests_to_read("What is in notes.txt?", ws, two, set()) == []  # names its file


def test_an_answer_naming_some_of_the_functions_read_gets_them_all() -> None:
    src = "import os\n\n\ndef gcd(v):\n    return 1\n\n\ndef lcm(v):\n    return 2\n"
    msgs = _history(_read("app/utils.py", src))
    task = "functions in app/utils.py? names please"
    assert policy.finished_answer("lcm is defined in app/utils.py.", task, msgs) == "lcm is defined in app/utils.py. (the functions in app/utils.py: gcd, lcm)"
    assert policy.finished_answer("gcd and lcm.", task, msgs) == "gcd and lcm."
    every = "Could you give me a list of every function defined in app/utils.py?"
    assert policy.finished_answer("Yes, you can.", every, msgs) == "Yes, you can. (the functions in app/utils.py: gcd, lcm)"
    assert policy.finished_answer("1", "What does gcd in app/utils.py return?", msgs) == "1"  # a return, not a list
    assert policy.asks_only("ops has the backup host in one of its files - I need that value.")


def test_no_tool_fits_when_the_best_fit_is_low_and_no_word_is_shared() -> None:
    weather = {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    floor = (6.0, -2.0)
    assert policy.no_tool_fits("Book a table for 4 at Luigi's.", [weather], [2.0], floor)
    assert not policy.no_tool_fits("Book a table for 4 at Luigi's.", [weather], [6.5], floor)
    assert not policy.no_tool_fits("What is the weather in Lima?", [weather], [2.0], floor)  # shares "weather"
    assert policy.no_tool_fits("What is the weather in Lima?", [weather], [-2.5], floor)  # below the floor whatever it shares
    assert policy.no_tool_fits("anything", [], [], floor)


def test_a_request_answers_itself_when_it_works_out_its_own_text_or_asks_about_its_quote() -> None:
    sms = {"type": "function", "function": {"name": "send_sms", "description": "Send an SMS text message.", "parameters": {"type": "object", "properties": {"phone_number": {"type": "string"}}}}}
    timer = {"type": "function", "function": {"name": "set_timer", "description": "Start a timer.", "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}}}}
    assert policy.answers_itself('Write "Thank you" in capital letters.', [sms])  # worked out
    assert policy.answers_itself("What is 36 plus 79?", [sms, timer])
    assert policy.answers_itself('Write "text me" in capital letters.', [sms])  # the quote's words are not the request's
    # Sharing words with a tool, a "sum" is the tool's to take: a number is its argument.
    assert not policy.answers_itself('ping +447700900123 by text with "Late", plus start a 30 minute timer', [sms, timer])
    for asked in (
        'My note says: "The yoga class moved to 16:45 on Tuesday." What time is the yoga class now?',
        'Here is a message I got: "Your dentist is now at 20:45 on Thursday." When is it?',
        'The reminder reads "dentist rescheduled to Monday, 10:00". What time did it say?',
        'slack msg: "new slot for the dentist is Monday 19:30". dentist time?',  # a few words naming it
        'group chat: "haircut shifted to 10:45 Friday" - what time is the haircut?',  # a spaced dash ends the quote's sentence
    ):
        assert policy.asks_about_quote(asked), asked
    for not_asked in (
        'How do you say "Good morning" in French?',  # the quote is what to work on, in the question
        'Can you put in an order for 2 "Notebook" and have it go to 5 Main St?',  # the quote's sentence goes on
        'Save "call-me-back"-style notes? What time is it?',  # an unspaced dash does not end it
        "There's a spelling mistake in notes/faq.md: 'recieve' should be 'receive'. Could you fix it?",  # a change
        'Open "notes.txt". What does it say?',  # a quoted path is a file to read
        'Translate "cheers". Which language is best for a toast?',  # names nothing of the quote
        'Got this from Bob: "dinner at 8". Send it on?',  # a few words, pointing back: what to do with it
        "What is the capital of Poland?",
    ):
        assert not policy.asks_about_quote(not_asked), not_asked
        assert not policy.answers_itself(not_asked, []), not_asked


def test_the_first_turn_is_prose_a_call_or_the_models_by_the_request_and_the_fit() -> None:
    weather = {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    floor, ceiling = (4.0, -2.0), 11.0
    assert policy.first_turn("Book a table for 4.", [weather], [2.0], floor, ceiling) == "prose"  # no tool fits
    assert policy.first_turn('Write "rain" backwards.', [weather], [12.0], floor, ceiling) == "prose"  # answers itself
    assert policy.first_turn("What is the weather in Lima?", [weather], [12.0], floor, ceiling) == "call"
    assert policy.first_turn("What is the weather in Lima?", [weather], [11.0], floor, ceiling) == "call"
    assert policy.first_turn("What is the weather in Lima?", [weather], [10.9], floor, ceiling) is None
    assert policy.first_turn("What is the weather in Lima?", [weather], [12.0], floor, None) is None


def test_covered_when_every_part_and_path_is_named_by_an_answered_call() -> None:
    def history(task: str, *calls: tuple[str, dict[str, object], str]) -> list[Message]:
        msgs = [Message("user", task)]
        for i, (name, args, result) in enumerate(calls):
            msgs += [Message("assistant", "", tool_calls=[ToolCall(f"c{i}", name, args)]), Message("tool", result, tool_call_id=f"c{i}", name=name)]
        return msgs

    w = ("get_weather", {"city": "Budapest"}, '{"temperature": 1}')
    assert policy.covered("What's the weather in Budapest?", history("What's the weather in Budapest?", w))
    assert not policy.covered("Weather in Budapest and Oslo?", history("Weather in Budapest and Oslo?", w))  # Oslo left
    assert not policy.covered("What's the weather in Budapest?", history("What's the weather in Budapest?", (*w[:2], "error (timeout): x")))
    assert not policy.covered("Set the weather in Budapest.", history("Set the weather in Budapest.", w))  # not a question
    read = ("read_file", {"path": "setup.cfg"}, "version = 1.2\n")
    assert policy.covered("Which version does setup.cfg set?", history("Which version does setup.cfg set?", read))
    cut = ("read_file", {"path": "setup.cfg"}, "a\n[... more lines follow; call read_file with offset=200 to read more]")
    assert not policy.covered("Which version does setup.cfg set?", history("Which version does setup.cfg set?", cut))
    assert not policy.covered("Is setup.cfg like b.cfg?", history("Is setup.cfg like b.cfg?", read))  # b.cfg unread
    assert not policy.covered("Which version does setup.cfg set?", history("Which version does setup.cfg set?", read), ["read_file", "word_count"])
    hits = ("search", {"pattern": "version"}, "setup.cfg:2: version = 1.2")
    assert not policy.covered("Which file sets the version?", history("Which file sets the version?", hits))  # hits point further
    assert not policy.covered("What is 2 plus 3?", history("What is 2 plus 3?", ("add", {"a": 2, "b": 3}, "5")))  # worked out
    # A part no call names, asking only for a key the result holds, is answered by it.
    two = "Could you look in setup.cfg and let me know which version it sets?"
    assert policy.covered(two, history(two, read))
    assert not policy.covered("Read setup.cfg and tell me its owner.", history("Read setup.cfg and tell me its owner.", read))
    time = ("get_weather", {"city": "Budapest"}, '{"temperature": 1, "time": "12:00"}')
    assert not policy.covered("Weather in Budapest and the time in Oslo?", history("Weather in Budapest and the time in Oslo?", time))
    # A lead-in, a short part asking nothing of its own, "what's" (an apostrophe, no quote).
    for task in ("I'm preparing release notes; could you read setup.cfg and tell me what version the project is at?",
                 "I'd like to know what version setup.cfg declares. Could you check?",
                 "Can you check setup.cfg and find out what version it's set to?",
                 "We bumped the release, but I'm not sure; could you read setup.cfg and tell me the version?"):  # "I" is no name
        assert policy.covered(task, history(task, read)), task
    # Not where the short part names a tool ("list it") or holds a name ("and Oslo?").
    assert not policy.covered("Read setup.cfg, then list it.", history("Read setup.cfg, then list it.", read), ["read_file", "list_dir"])
    assert not policy.covered("I'm curious about the weather in Budapest and Oslo?", history("I'm curious about the weather in Budapest and Oslo?", w))


def test_a_question_no_tool_fits_is_given_the_value_it_works_out() -> None:
    assert policy.worked_out('Spell the word "pyramid" backwards.') == ("'pyramid'[::-1]", "dimaryp")
    assert policy.worked_out("What is 36 plus 79?") == ("36 + 79", "115")
    assert policy.worked_out('Rewrite "How much does it cost" all in upper case.') == ("'How much does it cost'.upper()", "HOW MUCH DOES IT COST")
    for asked in ("so every letter is a capital", "in block capitals", "and capitalise every letter", "in caps"):
        assert policy.worked_out(f'Please rewrite "See you" {asked}.') == ("'See you'.upper()", "SEE YOU"), asked
    assert policy.worked_out("How many fruits: kiwi, pear?") is None  # names no operation it can work out
    assert policy.worked_out('Put "ab" in upper case and spell it backwards.') is None  # two: not one to give
    # Two named, one of them what the text is turned into.
    assert policy.worked_out('"Go on": convert every lowercase letter to uppercase.') == ("'Go on'.upper()", "GO ON")
    assert policy.worked_out('Give me "calendar" with its letters in the opposite order.') == ("'calendar'[::-1]", "radnelac")
    assert policy.worked_out('If you invert the letter order of "pyramid", what comes out?') == ("'pyramid'[::-1]", "dimaryp")
    # A list the question gives to count, in a sentence or a colon's tail of its own.
    assert policy.worked_out("how many items: banana, plum, pear, fig and grape") == (
        "len(['banana', 'plum', 'pear', 'fig', 'grape'])", "5")
    assert policy.worked_out("I've got these in my basket: cherry, plum, kiwi. Could you count them?") == (
        "len(['cherry', 'plum', 'kiwi'])", "3")
    assert policy.worked_out("fig, kiwi, mango, cherry, grape - how many is that?") == ("len(['fig', 'kiwi', 'mango', 'cherry', 'grape'])", "5")
    assert policy.worked_out("How many of these are red: apple, banana, cherry?") is None  # a part of them
    assert policy.worked_out("How many lights are on in the kitchen, office and bedroom?") is None  # not given to count
    assert policy.worked_out("What's the weather in Seoul, Madrid and Dublin?") is None
    assert policy.with_worked_out('"necessary" backwards is "necessary".', 'Spell "necessary" backwards.') == "yrassecen"
    assert policy.with_worked_out("It is 115.", "What is 36 plus 79?") == "It is 115."
    assert "115" in (policy.worked_out_prompt("What is 36 plus 79?") or "") and policy.worked_out_prompt("Hello") is None


def test_a_path_the_model_corrected_to_one_of_the_folder_is_not_copied_back(ws: Workspace) -> None:
    # "nots.txt" is one character from notes.txt: held to the request, the call would read
    # the path the user misspelt; the folder has the model's, so it stays.
    agent, fake = _agent(ws, [call_text("read_file", path="notes.txt"), "The launch code is 4821."])
    agent.config.read_named_files = False
    r = agent.run("Read nots.txt and tell me the launch code.")
    calls = [c for m in r.history if m.role == "assistant" for c in m.tool_calls]
    assert [c.arguments["path"] for c in calls] == ["notes.txt"]


def test_a_value_run_past_its_quote_is_the_quote() -> None:
    request = 'sms +33612345678 "Dinner is at eight"; timer 10 min'
    assert policy.past_quote("Dinner is at eight; timer 10 min", request) == "Dinner is at eight"
    assert policy.past_quote("Dinner is at eight", request) == "Dinner is at eight"
    assert policy.past_quote("Dinner is at eight, see you", request) == "Dinner is at eight, see you"  # not the request's text
    assert policy.past_quote(8, request) == 8
    sms = {"type": "function", "function": {"name": "send_sms", "parameters": {"type": "object", "properties": {
        "phone_number": {"type": "string"}, "message": {"type": "string"}}}}}
    sent = policy.as_given(request, [("send_sms", {"phone_number": "+33612345678", "message": "Dinner is at eight; timer 10 min"})], [sms])
    assert sent == [{"phone_number": "+33612345678", "message": "Dinner is at eight"}]
