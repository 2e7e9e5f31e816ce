"""A GRPO run of TRL on CPU with a tiny local model: our `environment_factory` class under
TRL's own trainer, with nothing downloaded. It runs in the TRL environment
(`merchantbench.rl.trl_setup`), never in ours, which has no torch.

    python -m merchantbench.rl.trl_tiny OUT.json [--steps N] [--index I] [--start-day D]

What it does:

1. A tokenizer built here: byte-level, 256 byte tokens and no merges (so text tokenises the
   same whether TRL tokenises a tool answer alone or inside the prompt), the chat tokens
   `<|im_start|>`, `<|im_end|>` and `<|endoftext|>`, and the Qwen 2.5 chat template TRL ships
   (TRL parses its tool calls).
2. A Qwen2-architecture model of about 0.1 M parameters, randomly initialised, then taught by
   a few hundred steps of supervised training to answer this episode's prompt with one fixed
   assistant turn: list the six best sellers at 1.6 times their price through `use_tool`, then
   close every window with `end_of_step`. A random model never writes a valid tool call; this
   one does, so TRL's tool loop is exercised for real.
3. `GRPOTrainer(environment_factory=...)` with that model and a dataset row naming the episode,
   greedy decoding by default (`--temperature T --generations G` samples groups of G), one tool
   round: TRL makes the environments, calls `reset(**row)`, parses
   the model's tool calls, calls our methods, reads `get_reward`, and takes optimiser steps.

OUT.json holds the figures (seconds, tool calls and failures as TRL logged them, rewards) and
each rollout environment's episode summary, so a test can replay the same actions in process
and compare (tests/rl/test_trl_env.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from merchantbench.rl.trl_env import MerchantBenchTRLEnv

PROMPT = "Run the store: list products, then close every window. "
LISTED = 6
MARKUP = 1.6


class TinyEnv(MerchantBenchTRLEnv):
    """A short observation, no memory document: the prompt stays a few thousand bytes. Each
    scored rollout's reward and episode summary are kept for the report."""

    observation_chars = 300
    memory_chars = 0
    scored: ClassVar[list[dict[str, Any]]] = []

    def get_reward(self) -> float:
        reward = super().get_reward()
        TinyEnv.scored.append({"reward": reward, "episode": self._open().summary()})
        return reward


@dataclass(frozen=True)
class Sampling:
    """How GRPO samples its group: `temperature` 0 is greedy decoding (the rollouts of a group
    are then the same, so the advantages and the gradient are 0: the contract test's setting);
    above 0 each rollout samples, and `generations` rollouts make a group."""

    temperature: float = 0.0
    generations: int = 2
    learning_rate: float = 1e-5

    def generation_kwargs(self) -> dict[str, Any]:
        if self.temperature <= 0:
            return {"do_sample": False}
        return {"do_sample": True, "temperature": self.temperature, "top_k": 0, "top_p": 1.0}


def tokenizer(corpus: list[str], vocab: int = 1024) -> Any:
    """A byte-level BPE tokenizer trained here on `corpus`, with the Qwen chat tokens and the
    Qwen 2.5 chat template TRL ships (TRL knows how to parse its tool calls)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(corpus, trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        padding_side="left",
    )
    tok.chat_template = qwen2_5_chat_template
    return tok


def model(vocab: int) -> Any:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        tie_word_embeddings=True,
        use_cache=True,
    )
    return Qwen2ForCausalLM(config)


def policy_turn(row: dict[str, Any]) -> str:
    """The one assistant turn the tiny model is taught for this episode: list the best sellers,
    then one `end_of_step` per window."""
    probe = TinyEnv()
    probe.reset(**row)
    episode = probe._open()
    found = episode.call("search_products", {"sort": "sales_30d", "page_size": LISTED}).result
    items = [{"product_id": r[0], "sale_price": round(r[3] * MARKUP, 2)} for r in found["rows"]]
    calls = [
        {"name": "use_tool", "arguments": {"name": "list_product",
                                           "arguments": json.dumps({"items": items})}},
    ] + [{"name": "end_of_step", "arguments": {}}] * _windows(episode)  # fmt: skip
    return "".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>\n" for c in calls) + "<|im_end|>"


def _windows(episode: Any) -> int:
    return int(episode.config.days * 24 // episode.scenario.clock.hours_per_window)


def teach(net: Any, tok: Any, prompt_ids: list[int], turn: str, max_steps: int) -> dict[str, Any]:
    """Supervised steps on prompt + turn (loss on the turn) until greedy decoding reproduces it."""
    import torch

    target = tok(turn, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + target])
    labels = ids.clone()
    labels[0, : len(prompt_ids)] = -100
    optimiser = torch.optim.AdamW(net.parameters(), lr=3e-3)
    net.train()
    started = time.process_time()
    for step in range(1, max_steps + 1):
        out = net(input_ids=ids, labels=labels)
        optimiser.zero_grad()
        out.loss.backward()
        optimiser.step()
        predicted = out.logits[0, len(prompt_ids) - 1 : -1].argmax(-1)
        if bool((predicted == ids[0, len(prompt_ids) :]).all()):
            break
        if step % 20 == 0:
            _say(f"step {step}: loss {out.loss.item():.3f}")
    net.eval()
    return {"steps": step, "loss": out.loss.item(), "cpu_seconds": time.process_time() - started,
            "turn_tokens": len(target)}  # fmt: skip


def run(
    out: Path,
    steps: int,
    index: int,
    start_day: int,
    days: int,
    sampling: Sampling | None = None,
    teach_steps: int = 600,
) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(1)
    row: dict[str, Any] = {"split": "train", "index": index, "length": days, "start_day": start_day}
    probe = TinyEnv()
    messages = [{"role": "user", "content": PROMPT + probe.reset(**row)}]
    tools = [probe.end_of_step, probe.use_tool]  # TRL's order: the class's methods by name
    turn = policy_turn(row)
    tok = tokenizer([messages[0]["content"], turn, json.dumps(probe._open().tool_schemas())])
    prompt_ids = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=True,
                                         tokenize=True, return_dict=True)["input_ids"]  # fmt: skip
    net = model(len(tok))
    _say(f"prompt {len(prompt_ids)} tokens; teaching the model its turn")
    taught = teach(net, tok, list(prompt_ids), turn, max_steps=teach_steps)
    _say(f"taught in {taught['steps']} steps ({taught['cpu_seconds']:.1f} s CPU); GRPO")

    sampling = sampling or Sampling()
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": PROMPT}], **row}])
    args = GRPOConfig(
        output_dir=str(out.parent / "grpo"),
        use_cpu=True,
        per_device_train_batch_size=sampling.generations,
        num_generations=sampling.generations,
        max_steps=steps,
        max_completion_length=4096,
        max_tool_calling_iterations=1,
        generation_kwargs=sampling.generation_kwargs(),
        learning_rate=sampling.learning_rate,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=0,
    )
    started, cpu = time.perf_counter(), time.process_time()
    trainer = GRPOTrainer(
        model=net,
        processing_class=tok,
        train_dataset=data,
        environment_factory=TinyEnv,
        args=args,
    )
    logs, scored = train_in_groups(trainer, TinyEnv.scored, args.num_generations)
    steps_out = [
        {
            "log": log,
            "rewards": [s["reward"] for s in batch],
            "episodes": [s["episode"] for s in batch],
        }
        for log, batch in zip(logs, scored, strict=False)
    ]
    result = {
        "trl": _version("trl"),
        "transformers": _version("transformers"),
        "torch": _version("torch"),
        "parameters": sum(p.numel() for p in net.parameters()),
        "prompt_tokens": len(prompt_ids),
        "taught": taught,
        "train_seconds": time.perf_counter() - started,
        "train_cpu_seconds": time.process_time() - cpu,
        "global_step": trainer.state.global_step,
        "row": row,
        "sampling": asdict(sampling),
        "mean_reward_by_step": [float(log["reward"]) for log in logs],
        "steps": steps_out,
    }
    out.write_text(json.dumps(result, indent=1, default=str))
    return result


def train_in_groups(
    trainer: Any, scored: list[dict[str, Any]], group: int
) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """Train, then the trainer's logged steps with a reward and the episodes its environment
    class scored (`scored`, appended by each rollout), cut into the groups of each step."""
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    return logs, [scored[i : i + group] for i in range(0, len(scored), group)]


def command(env: Any, out: Path, steps: int = 2) -> list[str]:
    """The command that runs this module in the TRL environment `env` (an `IsolatedEnv`)."""
    return [str(env.python), "-m", "merchantbench.rl.trl_tiny", str(out), "--steps", str(steps)]


def environ() -> dict[str, str]:
    """Its environment: ours, with this checkout's package importable (through a folder holding
    only a link to it, so nothing else of our environment leaks in), offline for the hub, and
    TRL's experimental-feature warning silenced."""
    import os
    import tempfile

    import merchantbench
    from merchantbench.training_envs import clean_environ

    package = Path(merchantbench.__file__).parent
    folder = Path(tempfile.mkdtemp(prefix="merchantbench-path-"))
    (folder / "merchantbench").symlink_to(package, target_is_directory=True)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {**clean_environ(), "PYTHONPATH": path, "HF_HUB_OFFLINE": "1",
            "TRL_EXPERIMENTAL_SILENCE": "1", "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip


def _say(text: str) -> None:
    print(f"trl_tiny: {text}", file=sys.stderr, flush=True)


def _version(name: str) -> str:
    import importlib.metadata

    return importlib.metadata.version(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m merchantbench.rl.trl_tiny")
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--index", type=int, default=3)
    parser.add_argument("--start-day", type=int, default=200)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    parser.add_argument("--generations", type=int, default=2, help="rollouts per group")
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--teach-steps", type=int, default=600)
    args = parser.parse_args(argv)
    sampling = Sampling(args.temperature, args.generations, args.lr)
    result = run(args.out, args.steps, args.index, args.start_day, args.days, sampling,
                 args.teach_steps)  # fmt: skip
    keys = ("global_step", "train_seconds", "taught", "mean_reward_by_step")
    print(json.dumps({k: result[k] for k in keys}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
