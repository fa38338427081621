"""Task-level figures of the benchmark on the tiny model: a warm start that survives a new
folder (the cached prefix holds no workspace overview), and what each figure counts."""

from __future__ import annotations

import pytest

from localagent.backends.llama import LlamaBackend
from localagent.evaluation.bench import _setup, loop_overhead, task_figures
from localagent.provision import resolve_model

pytestmark = pytest.mark.real


def test_a_warm_start_survives_a_change_of_folder() -> None:
    out = task_figures(resolve_model("smollm2-135m", progress=False), n_ctx=4096)
    assert out["prefix_tokens"] > 300  # the instructions and the tools
    assert out["task_warm_start"] == "loaded"  # another folder, the same prefix on disk
    # The warm first step evaluates only the overview and the task, not the prefix again.
    assert out["first_step_evaluated_share_warm"] <= 0.3, out
    assert out["prefix_save_seconds"] >= 0 and out["task_seconds_cold"] > 0
    assert 0 < out["task_seconds_model_share"] <= 1


def test_the_loop_overhead_is_measured_on_a_big_root_with_a_trace() -> None:
    backend = LlamaBackend(resolve_model("smollm2-135m", progress=False), n_ctx=4096, warm_start=False)
    out = loop_overhead(_setup(backend))
    assert out["loop_root_files"] == 5000 and out["loop_trace_bytes"] > 0 and out["loop_run_steps"] >= 1
    # Ours (walks of 5,000 files, policy, tools, trace) against the tiny model's generation,
    # the fastest there is here: a bound that fails if a walk per step creeps in.
    assert 0 <= out["loop_overhead_pct"] <= 35, out
