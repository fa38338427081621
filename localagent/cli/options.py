"""The options more than one command takes, declared once: where the agent works, the model and
its limits (in chat, of each turn: its help says so), approval, the model behind a server
instead of in-process, the constraint engine, and ``--json`` output."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

ROOT = typer.Option(Path("."), "--root", help="The folder the tools work in.")
MODEL = typer.Option(None, "--model", help="A model id (see `models list`) or a .gguf path; with --base-url, the server's model name.")
LOCAL_MODEL = typer.Option(None, "--model", help="A model id (see `models list`) or a .gguf path.")  # no --base-url
MAX_STEPS = typer.Option(12, "--max-steps", min=1, help="Step limit.")
TOKEN_BUDGET = typer.Option(None, "--token-budget", min=1, help="Budget on tokens evaluated plus generated.")
DEADLINE = typer.Option(None, "--deadline", min=0.0, help="Wall-clock limit in seconds.")
# The sampler chain above --temperature 0 (llama.cpp's defaults and order; greedy ignores it).
TOP_K = typer.Option(40, "--top-k", min=0, help="Sampling: keep the K most likely tokens (0: all).")
TOP_P = typer.Option(0.95, "--top-p", min=0.0, max=1.0, help="Sampling: keep the fewest tokens whose probability reaches P (1: all).")
MIN_P = typer.Option(0.05, "--min-p", min=0.0, max=1.0, help="Sampling: drop tokens below P times the best one's probability (0: none).")
REPEAT_PENALTY = typer.Option(
    1.0, "--repeat-penalty", min=0.01,
    help="Penalise tokens among the last 64 (a logit above 0 divided by it, below 0 multiplied; 1: off). Applies at temperature 0 too.",
)
TOOLS = typer.Option(
    None, "--tools",
    help="A Python file of extra tools: @tool functions, or a list TOOLS of (OpenAI-style definition, function) pairs. Tools that do not say irreversible=False need approval.",
)
CTX = typer.Option(8192, "--ctx", min=256, help="Context window in tokens.")
N_GPU_LAYERS = typer.Option(0, "--n-gpu-layers", help="Layers to offload to a GPU (needs a CUDA or Metal build).")
VERBOSE = typer.Option(False, "--verbose", help="Show llama.cpp's own logs.")
ENGINE = typer.Option("gbnf", "--engine", help="The constraint engine: gbnf (llama.cpp) or llguidance.")
YES = typer.Option(False, "--yes", "-y", help="Approve every write and command without asking.")
ALLOW = typer.Option(None, "--allow", help="Approve this tool without asking (repeatable), e.g. --allow edit_file.")
ALLOW_COMMANDS = typer.Option(False, "--allow-commands", help="Offer run_command (each call still needs approval).")
TOOL_CHOICE = typer.Option(
    "auto", "--tool-choice",
    help="auto (the model decides), required (every step calls a tool), none (no calls), or a tool's name (every step calls it).",
)
MCP = typer.Option(
    None, "--mcp",
    help='An MCP server whose tools to offer (repeatable): a URL (streamable HTTP) or a command line (stdio), e.g. --mcp "npx -y @modelcontextprotocol/server-memory". Its tools not marked read-only need approval.',
)
# The model behind an OpenAI-compatible server instead of in-process.
BASE_URL = typer.Option(None, "--base-url", help="An OpenAI-compatible server (llama.cpp, vLLM), e.g. http://127.0.0.1:8080; --model is then its model name.")
API_KEY = typer.Option(None, "--api-key", help="Bearer token for --base-url (better: LOCALAGENT_API_KEY).")
SERVER_DIALECT = typer.Option("auto", "--server-dialect", help="How the constraint is sent: llama.cpp (grammar), vllm (structured_outputs), vllm-legacy (guided_grammar), openai (tools), auto (ask /v1/models).")
SERVER_TIMEOUT = typer.Option(120.0, "--server-timeout", min=0.1, help="Seconds to wait for the server before a try counts as failed.")



def json_option(holding: str) -> Any:
    """``--json``: one JSON object on stdout instead of text; ``holding`` says what is in it."""
    return typer.Option(False, "--json", help=f"Print one JSON object ({holding}) and nothing else on stdout.")


# A library error names a setting by its parameter, in backticks (`api_key`); shown at the
# command line, it names the flag that sets it. A library message that names another
# parameter adds it here.
FLAGS = {
    "allow": "--allow",
    "api_key": "--api-key",
    "base_url": "--base-url",
    "dialect": "--server-dialect",
    "verbose": "--verbose",
}


def flag_text(message: str) -> str:
    """``message`` with each backticked parameter that has a flag written as that flag."""
    return re.sub(r"`(\w+)`", lambda m: FLAGS.get(m[1], m[0]), message)
