"""PPO with per-listing credit on the classic store env (`rl.classic`): every candidate slot is
an agent of its own, all sharing one network, each trained on its own reward.

Why: the store's reward is one number a window for 32 decisions, so a policy trained on it (SB3's
PPO, docs/rl.md) cannot tell which listing earned or lost it. The env splits the window's change
in net assets by slot exactly (`info["slot_rewards_fen"]`: each listing's margins, fees and
fines; they sum to the reward), so each slot's decision is judged mostly by what that listing
did. The shared actor reads a slot's features with the store's and gives that slot's 8 markup
logits; the shared critic estimates that slot's own return. A slot's reward is
`(1 − s) × its own + s × the store's / slots` (`--store-share` s, 0.5): a listing's effect on
the others (its bad reviews lower the store's rating and so their demand, its purchases draw on
the shared balance) reaches it only through the store's part. Returns are undiscounted over
the episode (`--gamma` 1: the last window's drain pays out every open order, which a discount
would weigh less for slow-selling high markups). The stores run as a `StoreVectorEnv` (their
windows advanced together on the one engine).

Runs in the sb3 environment (torch; `uv run python -m merchantbench.training_envs sb3`), with
this checkout on `PYTHONPATH`:

    python -m merchantbench.rl.slot_ppo --minutes 25 --out rl-slot

It writes `curve.json` (wall and CPU seconds, windows, the mean training return, the held-out
mean at each evaluation) and `results.json` (per-episode held-out scores of the learnt policy,
random actions, the best constant action and the rule-based agent, paired), as
`rl.sb3_train` does.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from merchantbench.rl.classic import GLOBAL, SLOT, StoreEnv, StoreVectorEnv
from merchantbench.rl.classic_eval import Curve, comparison, episodes, play, tuned_constant

__all__ = ["SlotAgent", "main"]


class SlotAgent(nn.Module):
    """One actor and one critic shared by the slots: (store, slot) features → that slot's
    logits and the value of that slot's own return."""

    def __init__(self, slots: int, levels: int, width: int = 64) -> None:
        super().__init__()
        self.slots, self.levels = slots, levels

        def mlp(out: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Linear(SLOT + GLOBAL, width),
                nn.Tanh(),
                nn.Linear(width, width),
                nn.Tanh(),
                nn.Linear(width, out),
            )

        self.actor, self.critic = mlp(levels), mlp(1)
        last = self.actor[-1]
        assert isinstance(last, nn.Linear)
        nn.init.orthogonal_(last.weight, gain=0.01)
        nn.init.zeros_(last.bias)

    def per_slot(self, obs: torch.Tensor) -> torch.Tensor:
        """(batch, GLOBAL + slots·SLOT) → (batch, slots, SLOT + GLOBAL)."""
        store = obs[:, :GLOBAL].unsqueeze(1).expand(-1, self.slots, -1)
        return torch.cat([obs[:, GLOBAL:].reshape(-1, self.slots, SLOT), store], dim=2)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.actor(features), self.critic(features).squeeze(-1)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """The most likely level of every slot (the evaluated, deterministic policy)."""
        with torch.no_grad():
            logits, _ = self(self.per_slot(torch.as_tensor(obs, dtype=torch.float32)[None]))
        return logits[0].argmax(-1).numpy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="small")
    parser.add_argument("--length", default="30d")
    parser.add_argument("--minutes", type=float, default=25.0, help="training wall-clock budget")
    parser.add_argument("--envs", type=int, default=32, help="stores stepped together")
    parser.add_argument("--pool", type=int, default=16, help="training markets")
    parser.add_argument("--test", type=int, default=20, help="held-out validation episodes")
    parser.add_argument("--tune", type=int, default=16, help="train episodes to pick the constant")
    parser.add_argument("--eval-every", type=float, default=300.0, help="seconds")
    parser.add_argument("--horizon", type=int, default=60, help="windows per update")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--minibatch", type=int, default=8192, help="slot-windows")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--gamma", type=float, default=1.0, help="per window (60 an episode)")
    parser.add_argument("--lam", type=float, default=0.95)
    parser.add_argument("--clip", type=float, default=0.2)
    parser.add_argument("--ent-coef", type=float, default=0.003)
    parser.add_argument("--prior", type=float, default=2.0, help="initial logit on the constant's")
    parser.add_argument("--reward-unit", type=float, default=1000.0, help="fen per reward unit")
    parser.add_argument(
        "--store-share",
        type=float,
        default=0.5,
        help="a slot's reward: (1 − s) × its own + s × the store's / slots",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("rl-slot"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    kwargs = {"scenario": args.scenario, "length": args.length, "pool": args.pool}
    probe = StoreEnv(**kwargs)  # type: ignore[arg-type]
    test = episodes("validation", args.test, probe.last_start)
    tune = episodes("train", args.tune, probe.last_start)
    (count, level), means, tune_seconds = tuned_constant(probe, tune)  # on training episodes

    slots, levels = probe.slots, 1 + len(probe.markups)
    agent = SlotAgent(slots, levels)
    with torch.no_grad():
        agent.actor[-1].bias[level] += args.prior  # start near the best constant's markup
    optimiser = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    venv = StoreVectorEnv(args.envs, **kwargs)  # type: ignore[arg-type]
    obs, _ = venv.reset(seed=args.seed)
    n, horizon = args.envs, args.horizon
    curve = Curve(args.out)
    returns: list[float] = []
    running = np.zeros(n)
    started, cpu = time.perf_counter(), time.process_time()
    next_eval, windows = args.eval_every, 0

    def held_out() -> list[float]:
        return [play(probe, agent.act, spec) for spec in test]

    def log(scores: list[float] | None) -> None:
        point = {
            "seconds": round(time.perf_counter() - started, 1),
            "cpu_seconds": round(time.process_time() - cpu, 1),
            "windows": windows,
            "train_return_rmb": float(np.mean(returns[-64:])) if returns else None,
            "held_out_mean_rmb": None if scores is None else float(np.mean(scores)),
        }
        curve.add(point)

    log(held_out())
    while time.perf_counter() - started < args.minutes * 60:
        feats = torch.zeros(horizon, n, slots, SLOT + GLOBAL)
        acts = torch.zeros(horizon, n, slots, dtype=torch.long)
        logps = torch.zeros(horizon, n, slots)
        values = torch.zeros(horizon + 1, n, slots)
        rewards = torch.zeros(horizon, n, slots)
        dones = torch.zeros(horizon, n)
        for t in range(horizon):
            x = agent.per_slot(torch.as_tensor(obs, dtype=torch.float32))
            with torch.no_grad():
                logits, value = agent(x)
                dist = torch.distributions.Categorical(logits=logits)
                action = dist.sample()
            feats[t], acts[t], logps[t], values[t] = x, action, dist.log_prob(action), value
            obs, _, done, _, info = venv.step(action.numpy())
            step_slots = info["slot_rewards_fen"]
            if "final_info" in info:  # a finished store's last step: its own slot rewards
                finished = info["_final_info"]
                step_slots = np.where(
                    finished[:, None], info["final_info"]["slot_rewards_fen"], step_slots
                )
                running += np.where(finished, info["final_info"]["reward_fen"], 0)
                returns.extend((running[finished] / 100).tolist())
                running[finished] = 0
            running += np.where(done, 0, info["reward_fen"])
            store = step_slots.sum(axis=1, keepdims=True) / slots  # the same for every slot
            mixed = (1 - args.store_share) * step_slots + args.store_share * store
            rewards[t] = torch.as_tensor(mixed / args.reward_unit, dtype=torch.float32)
            dones[t] = torch.as_tensor(done, dtype=torch.float32)
            windows += n
        with torch.no_grad():
            values[horizon] = agent(agent.per_slot(torch.as_tensor(obs, dtype=torch.float32)))[1]
        advantages = torch.zeros(horizon, n, slots)
        gae = torch.zeros(n, slots)
        for t in reversed(range(horizon)):
            alive = (1.0 - dones[t])[:, None]
            delta = rewards[t] + args.gamma * values[t + 1] * alive - values[t]
            gae = delta + args.gamma * args.lam * alive * gae
            advantages[t] = gae
        targets = advantages + values[:horizon]
        flat = (feats.reshape(-1, SLOT + GLOBAL), acts.reshape(-1), logps.reshape(-1),
                advantages.reshape(-1), targets.reshape(-1))  # fmt: skip
        size = flat[0].shape[0]
        for _ in range(args.epochs):
            for batch in torch.randperm(size).split(args.minibatch):
                x, a, old, adv, target = (part[batch] for part in flat)
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                logits, value = agent(x)
                dist = torch.distributions.Categorical(logits=logits)
                ratio = (dist.log_prob(a) - old).exp()
                policy_loss = -torch.min(
                    ratio * adv, ratio.clamp(1 - args.clip, 1 + args.clip) * adv
                ).mean()
                loss = policy_loss + 0.5 * (value - target).pow(2).mean()
                loss = loss - args.ent_coef * dist.entropy().mean()
                optimiser.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimiser.step()
        if time.perf_counter() - started >= next_eval:
            next_eval += args.eval_every
            log(held_out())
        else:
            log(None)
    train_seconds, train_cpu = time.perf_counter() - started, time.process_time() - cpu
    learnt = held_out()
    log(learnt)
    torch.save(agent.state_dict(), args.out / "slot_agent.pt")

    results = {
        "scenario": args.scenario,
        "length": args.length,
        "train_seconds": round(train_seconds, 1),
        "train_cpu_seconds": round(train_cpu, 1),
        "tune_seconds": round(tune_seconds, 1),
        "train_windows": windows,
        "args": {k: str(v) for k, v in vars(args).items()},
        **comparison(probe, test, "slot_ppo", learnt, (count, level), means),
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(json.dumps({"means": results["means"], "vs": results["slot_ppo_vs"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
