"""GRPO that learns on a CPU: TRL's `GRPOTrainer` samples groups of a tiny local model's
answers to one pricing decision, and the mean reward rises over the steps.

`trl_tiny` shows TRL's tool loop on our environment class, but its model is taught one exact
turn, so sampled turns break the tool-call syntax and no group's rewards differ for a reason
the model could learn (docs/rl.md). Here the decision is one number and the rest is fixed:

- the task: a `days`-day episode (train split, one row) where the model answers with one tool
  call, `list_and_run(markup)`: list the `LISTED` best sellers at `markup` × their procurement
  price, then close every window to the episode's end. The reward is the episode's (its change
  in net assets over the initial net assets, `get_reward`), so markups differ in reward;
- the model (`trl_tiny.model`, 0.14 M parameters) is taught the call's syntax with every markup
  of `TAUGHT` equally often, so that sampling (temperature > 0) gives valid calls whose markups
  vary: the group's rewards then differ because of the markup, which GRPO can learn from;
- GRPO: groups of `--generations` (≥ 4) samples at `--temperature`, one optimiser step a group.

Runs in TRL's environment (`uv run python -m merchantbench.training_envs trl`):

    python -m merchantbench.rl.trl_pricing OUT.json [--steps 20] [--generations 4]

OUT.json: the reward of each markup (every taught markup played once, in process), the taught
model's sampled markups before GRPO, and per step the group's markups, rewards and mean.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from merchantbench.rl.trl_tiny import TinyEnv, model, tokenizer, train_in_groups

__all__ = ["PricingEnv", "main"]

LISTED = 8
TAUGHT = (1.2, 1.5, 2.0, 2.5, 3.0, 4.0)
PROMPT = "Price the store: call list_and_run once with a markup. "


class PricingEnv(TinyEnv):
    """The pricing decision: the episode opens, the model chooses one markup."""

    scenario = "small"

    def reset(self, **row: Any) -> str:  # type: ignore[override]
        """Open the row's episode; the prompt gets a short note (the store opens, its day)."""
        super().reset(**row)
        episode = self._open()
        return f"Your store opens on day {episode.config.start_day} for {episode.config.days} days."

    def list_and_run(self, markup: float) -> str:
        """List the best sellers at `markup` times their procurement price, then run the
        episode to its end.

        Args:
            markup: The sale price as a multiple of the procurement price, e.g. 2.0.

        Returns:
            The episode's result (its change in net assets).
        """
        episode = self._open()
        if episode.over:
            return json.dumps({"ok": False, "error": {"code": "run_over"}})
        found = episode.call("search_products", {"sort": "sales_30d", "page_size": LISTED})
        items = [
            {"product_id": r[0], "sale_price": round(r[3] * float(markup), 2)}
            for r in found.result.get("rows", [])
        ]
        episode.call("list_product", {"items": items})
        while not episode.over:
            episode.call("end_of_step")
        return f"The episode is over: net assets changed by {episode.change_fen / 100:.2f} RMB."


def conversation(markup: float, result: str) -> list[dict[str, Any]]:
    """The taught exchange after the prompt: the call, the tool's answer, a short last turn."""
    call = {"name": "list_and_run", "arguments": {"markup": markup}}
    return [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": call}],
        },
        {"role": "tool", "name": "list_and_run", "content": result},
        {"role": "assistant", "content": "Done."},
    ]


_MARKUP = re.compile(r'"markup":\s*([0-9.]+)')


def markup_of(text: str) -> float | None:
    """The markup of a completion's call (None: no valid call)."""
    found = _MARKUP.search(text)
    try:
        return float(found.group(1)) if found and "list_and_run" in text else None
    except ValueError:
        return None


def outcome_of(row: dict[str, Any], markup: float) -> tuple[float, str]:
    """The reward of a markup on the row's episode, and the tool's answer."""
    env = PricingEnv()
    env.reset(**row)
    answer = env.list_and_run(markup)
    return float(env.get_reward()), answer


def teach(
    net: Any, tok: Any, messages: list[dict[str, Any]], tools: list[Any],
    answers: dict[float, str], steps: int,
) -> dict[str, Any]:  # fmt: skip
    """Supervised steps on each taught exchange in turn, the loss on the model's two turns
    (the call, and the last turn after the tool's answer), not on the prompt or the answer."""
    import torch

    def render(conv: list[dict[str, Any]], prompt: bool) -> str:
        return str(tok.apply_chat_template(conv, tools=tools, tokenize=False,
                                           add_generation_prompt=prompt))  # fmt: skip

    batches = []
    for markup, answer in answers.items():
        call, tool, last = conversation(markup, answer)
        marks = [
            render(messages, True),
            render([*messages, call], False),
            render([*messages, call, tool], True),
            render([*messages, call, tool, last], False),
        ]
        ids: list[int] = []
        labels: list[int] = []
        for k, text in enumerate(marks):
            piece = tok(text[len(marks[k - 1]) if k else 0 :], add_special_tokens=False)[
                "input_ids"
            ]
            ids += piece
            labels += piece if k in (1, 3) else [-100] * len(piece)
        batches.append((torch.tensor([ids]), torch.tensor([labels])))
    optimiser = torch.optim.AdamW(net.parameters(), lr=3e-3)
    net.train()
    started = time.process_time()
    loss = 0.0
    for step in range(steps):
        ids, labels = batches[step % len(batches)]
        out = net(input_ids=ids, labels=labels)
        optimiser.zero_grad()
        out.loss.backward()
        optimiser.step()
        loss = out.loss.item()
    net.eval()
    return {"steps": steps, "last_loss": loss, "cpu_seconds": time.process_time() - started}


def sample_markups(net: Any, tok: Any, prompt_ids: list[int], n: int, temperature: float) -> list:
    import torch

    ids = torch.tensor([prompt_ids] * n)
    with torch.no_grad():
        out = net.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True,
                           temperature=temperature, top_k=0, top_p=1.0, max_new_tokens=48,
                           pad_token_id=tok.pad_token_id)  # fmt: skip
    texts = tok.batch_decode(out[:, len(prompt_ids) :], skip_special_tokens=False)
    return [markup_of(text) for text in texts]


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    row: dict[str, Any] = {"split": "train", "index": args.index, "length": args.days,
                           "start_day": args.start_day}  # fmt: skip
    outcomes = {m: outcome_of(row, m) for m in TAUGHT}
    rewards = {m: reward for m, (reward, _) in outcomes.items()}
    _say(f"reward of each markup: {rewards}")
    probe = PricingEnv()
    messages = [{"role": "user", "content": PROMPT + probe.reset(**row)}]
    tools = [probe.end_of_step, probe.list_and_run, probe.use_tool]  # TRL's: by name
    answers = {m: answer for m, (_, answer) in outcomes.items()}
    corpus = [messages[0]["content"]]
    for markup, answer in answers.items():
        corpus += [json.dumps(c) for c in conversation(markup, answer)]
    template = tokenizer(corpus * 4)
    prompt_ids = list(template.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True
    )["input_ids"])  # fmt: skip
    net = model(len(template))
    taught = teach(net, template, messages, tools, answers, args.teach_steps)
    before = sample_markups(net, template, prompt_ids, 32, args.temperature)
    _say(f"taught ({taught}); sampled markups: {Counter(before)}")

    PricingEnv.scored.clear()
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": PROMPT}], **row}] * 4)
    config = GRPOConfig(
        output_dir=str(args.out.parent / "grpo-pricing"),
        use_cpu=True,
        per_device_train_batch_size=args.generations,
        num_generations=args.generations,
        max_steps=args.steps,
        max_completion_length=96,
        max_tool_calling_iterations=1,
        generation_kwargs={
            "do_sample": True,
            "temperature": args.temperature,
            "top_k": 0,
            "top_p": 1.0,
        },  # fmt: skip
        temperature=args.temperature,
        learning_rate=args.lr,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=args.seed,
    )
    clock: list[float] = []

    class Clock(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, *a: Any, **k: Any) -> None:
            clock.append(time.perf_counter())

    started, cpu = time.perf_counter(), time.process_time()
    trainer = GRPOTrainer(
        model=net,
        processing_class=template,
        train_dataset=data,
        environment_factory=PricingEnv,
        args=config,
        callbacks=[Clock()],
    )
    logs, scored = train_in_groups(trainer, PricingEnv.scored, args.generations)
    group = args.generations
    after = sample_markups(net, template, prompt_ids, 32, args.temperature)
    result = {
        "row": row,
        "parameters": sum(p.numel() for p in net.parameters()),
        "prompt_tokens": len(prompt_ids),
        "reward_by_markup": {str(m): r for m, r in rewards.items()},
        "taught": taught,
        "sampled_before": [m for m in before],
        "sampled_after": [m for m in after],
        "generations": group,
        "temperature": args.temperature,
        "learning_rate": args.lr,
        "train_seconds": time.perf_counter() - started,
        "train_cpu_seconds": time.process_time() - cpu,
        "step_seconds": [round(b - a, 1) for a, b in zip([started, *clock], clock, strict=False)],
        "mean_reward_by_step": [float(log["reward"]) for log in logs],
        "rewards_by_step": [[s["reward"] for s in batch] for batch in scored],
    }
    args.out.write_text(json.dumps(result, indent=1, default=str))
    return result


def _say(text: str) -> None:
    print(f"trl_pricing: {text}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m merchantbench.rl.trl_pricing")
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--index", type=int, default=3)
    parser.add_argument("--start-day", type=int, default=100)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--teach-steps", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.generations < 2 or args.temperature <= 0:
        parser.error("GRPO learns from a group's differences: --generations ≥ 2, --temperature > 0")
    result = run(args)
    keys = ("reward_by_markup", "mean_reward_by_step", "train_seconds", "train_cpu_seconds")
    print(json.dumps({k: result[k] for k in keys}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
