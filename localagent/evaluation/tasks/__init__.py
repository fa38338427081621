"""The task suite: everyday multi-step work in small generated workspaces, checked by the
answer and by the workspace afterwards (``suite``: the task record; ``generate``: the
templates; ``check``: success and the failure class; ``runner``: runs the tasks through the
code path of ``localagent run``)."""
