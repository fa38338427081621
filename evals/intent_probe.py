"""Can the default model tell a change from a question? One yes/no prompt per distinct task
wording (dev, test2 and the dev paraphrase files), the first token's log-odds of yes over
no, against the task's kind (edit_* asks for a change), beside the policy's rules:

    python evals/intent_probe.py > evals/results/intent-probe-qwen2.5-coder-0.5b.json

Measured to decide whether the model could judge a wording the rules do not know (it
could not: see evals/README.md, Everyday tasks: held-out splits)."""
import json
import sys
from pathlib import Path

import numpy as np

from localagent import policy
from localagent.backends.llama import LlamaBackend
from localagent.evaluation.tasks.generate import generate
from localagent.evaluation.tasks.suite import load_tasks
from localagent.messages import Message
from localagent.provision import resolve_model

SYS = ("You sort requests about files. Reply yes if the request asks to create, change, fix, add to or write a file; "
       "reply no if it only asks for information or an answer.")
files = [Path(f"evals/results/tasks-{s}.jsonl") for s in ("devx", "devp", "devq", "devr")]
tasks = generate("dev") + generate("test2") + [t for f in files for t in load_tasks(f)]
b = LlamaBackend(resolve_model("qwen2.5-coder-0.5b"), n_ctx=2048, warm_start=False)
yes = [b.tokenize(w, special=False)[0] for w in ("yes", "Yes")]
no = [b.tokenize(w, special=False)[0] for w in ("no", "No")]
rows, seen = [], set()
for t in tasks:
    if t.prompt in seen:
        continue
    seen.add(t.prompt)
    msgs = [Message("system", SYS), Message("user", f"Request: {t.prompt}\nDoes it ask to change a file? yes or no")]
    b.llm.reset()
    b.llm.eval(b.prompt_ids(msgs, []))
    lg = b.logits()
    z = float(np.logaddexp.reduce(lg[yes]) - np.logaddexp.reduce(lg[no]))
    rows.append({"id": t.id, "change": t.kind.startswith("edit_"), "log_odds_yes": round(z, 3),
                 "rules_change": policy.wants_change(t.prompt), "rules_question": policy.asks_only(t.prompt)})
ch = [r["log_odds_yes"] for r in rows if r["change"]]
qs = [r["log_odds_yes"] for r in rows if not r["change"]]
auc = sum((c > q) + 0.5 * (c == q) for c in ch for q in qs) / len(ch) / len(qs)
best = max((sum(c > t for c in ch) + sum(q <= t for q in qs), t) for t in sorted(set(ch + qs)))
rules = sum(r["rules_change"] == r["change"] for r in rows)
json.dump({"wordings": len(rows), "changes": len(ch), "auc": round(auc, 3), "best_threshold": round(best[1], 3),
           "right_at_best": best[0], "rules_right": rules, "rows": rows}, sys.stdout, indent=1)
