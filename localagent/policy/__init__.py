"""The agent's decisions about the model's next turn, in one place; the loop asks, this
package decides. Each was chosen on the dev split of the task suite (see the README), and
each lives with its concern: ``wording`` (what the task's words ask), ``calls`` (the calls
of a turn), ``arguments`` (their values, held to the request), ``looks`` (what to look at),
``edits`` (changes), ``answers`` (the answer) and
``first_turn`` (a run's first turn, call or prose, where the request decides it).
A test or script that swaps one of their names patches the submodule that uses it
(``policy.wording._ASKS``): the names here are the same objects, bound once."""

from .answers import (
    Evidence,
    answer_prompt,
    calculated,
    change_report,
    echoes_task,
    evidence,
    expressions,
    finished_answer,
    returned,
    unsupported,
    what_was_found,
    with_calculation,
    with_found_files,
    with_return_read,
    with_value_read,
    with_worked_out,
    worked_out,
    worked_out_prompt,
)
from .calls import (
    ANY,
    LAST,
    MAX_CALLS,
    NONE,
    STRUCTURED_STARTS,
    CallPlan,
    answered,
    call_plan,
    call_results,
    calls_implied,
    calls_implied_now,
    code_examples,
    excluded,
    named,
    names,
    naming,
    next_part,
    next_tool,
    no_tool_fits,
    optional_texts,
    part_names,
    part_tool,
    parts_left,
    request_parts,
    sentence_starts,
    serving_tools,
    tool_match,
)
from .arguments import as_given, copied, copied_values, made_up, past_quote, repeats_given, request_words, unasked
from .edits import (
    COPIED_TEXT,
    change_done,
    content_choices,
    copy_pieces,
    edits_every,
    look_before_change,
    named_spans,
    new_word,
    ready_to_append,
    writes_first,
    replaces_words,
    spans,
    to_create,
    word_spans,
    write_targets,
    writes_files,
)
from .looks import (
    _ABOUT_WORKSPACE,
    PATH_ERRORS,
    WORKSPACE_TOOLS,
    Repeat,
    answers_once_read,
    counted_files,
    covered,
    finds_first,
    found_by_search,
    hits_to_read,
    manifests_to_read,
    means_the_same,
    missing_named,
    must_look,
    named_files,
    on_repeat,
    read_whole,
    rereads,
    search_again,
    search_hits,
    search_words,
    searches_first,
    unread_named,
)
from .first_turn import FirstTurn, answer_in_call, answers_itself, asked_about, asks_about_quote, call_in_prose, first_turn
from .wording import _ASKS, appends, asks_only, asks_which_file, computes, task_words, unwrapped, wants_change

__all__ = [
    # wording
    "appends", "asks_only", "asks_which_file", "computes", "task_words", "unwrapped", "wants_change",
    # calls
    "ANY", "LAST", "MAX_CALLS", "NONE", "STRUCTURED_STARTS", "CallPlan", "answered", "call_plan", "call_results", "calls_implied",
    "calls_implied_now", "code_examples", "excluded", "named", "names", "naming", "next_part", "next_tool", "no_tool_fits", "optional_texts",
    "part_names", "part_tool", "parts_left", "request_parts", "sentence_starts", "serving_tools",
    "tool_match", "unasked", "as_given", "copied", "copied_values", "made_up", "past_quote", "repeats_given", "request_words",
    # looks
    "PATH_ERRORS", "WORKSPACE_TOOLS", "Repeat", "answers_once_read", "counted_files", "covered", "finds_first", "found_by_search",
    "hits_to_read", "manifests_to_read", "means_the_same", "missing_named", "must_look", "named_files", "on_repeat", "read_whole", "rereads",
    "search_again", "search_hits", "search_words", "searches_first", "unread_named",
    # edits
    "COPIED_TEXT", "change_done", "content_choices", "copy_pieces", "edits_every", "look_before_change", "named_spans",
    "new_word", "ready_to_append", "replaces_words", "spans", "to_create", "word_spans", "write_targets", "writes_files", "writes_first",
    # answers
    "Evidence", "answer_prompt", "calculated", "change_report", "echoes_task", "evidence", "expressions",
    "finished_answer", "returned", "unsupported", "what_was_found", "with_calculation", "with_found_files",
    "with_return_read", "with_value_read", "with_worked_out", "worked_out", "worked_out_prompt",
    # first_turn
    "FirstTurn", "answer_in_call", "answers_itself", "asked_about", "asks_about_quote", "call_in_prose", "first_turn",
]
