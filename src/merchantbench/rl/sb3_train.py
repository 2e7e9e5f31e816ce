"""Train PPO (stable-baselines3) on the classic store env and compare it on held-out episodes
with random, the best constant action and the rule-based agent (docs/rl.md, "Classic RL").

Runs in the sb3 environment (`uv run python -m merchantbench.training_envs sb3`: torch 2.13.0
CPU and stable-baselines3 2.9.2), with this checkout on `PYTHONPATH`:

    python -m merchantbench.rl.sb3_train --minutes 25 --out rl-out

It writes `rl-out/curve.json` (wall seconds, steps, mean return of the last training episodes,
and the held-out mean at each evaluation) and `rl-out/results.json` (per-episode scores of each
policy on the held-out validation episodes, and the paired differences).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from merchantbench.rl.classic import StoreEnv
from merchantbench.rl.classic_eval import Curve, comparison, episodes, play, tuned_constant


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="small")
    parser.add_argument("--length", default="30d")
    parser.add_argument("--minutes", type=float, default=25.0, help="training wall-clock budget")
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--pool", type=int, default=16, help="training markets")
    parser.add_argument("--test", type=int, default=20, help="held-out validation episodes")
    parser.add_argument("--tune", type=int, default=8, help="train episodes to pick the constant")
    parser.add_argument("--eval-every", type=float, default=300.0, help="seconds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policy", choices=("slots", "mlp"), default="slots")
    parser.add_argument(
        "--prior",
        type=float,
        default=1.0,
        help="initial logit added to the best constant's markup (slots policy)",
    )
    parser.add_argument("--ent-coef", type=float, default=0.0)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--n-steps", type=int, default=480, help="per env and update")
    parser.add_argument("--gamma", type=float, default=0.95)
    parser.add_argument("--out", type=Path, default=Path("rl-out"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    from merchantbench.rl.sb3_slots import SlotPolicy

    torch.set_num_threads(1)
    kwargs = {"scenario": args.scenario, "length": args.length, "pool": args.pool}
    probe = StoreEnv(**kwargs)
    test = episodes("validation", args.test, probe.last_start)
    tune = episodes("train", args.tune, probe.last_start, first=0)
    curve = Curve(args.out)
    for spec in test:  # the markets are built before the clock starts
        probe.reset(options={"split": spec.split, "index": spec.index, "start_day": 0})
    for index in range(args.pool):
        probe.reset(options={"index": index, "start_day": 0})
    (count, level), means, tune_seconds = tuned_constant(probe, tune)  # on training episodes
    started = time.perf_counter()

    def held_out(model: Any) -> list[float]:
        def policy(obs: np.ndarray) -> np.ndarray:
            return model.predict(obs, deterministic=True)[0]

        return [play(probe, policy, spec) for spec in test]

    class Budget(BaseCallback):
        """Stops at the wall-clock budget; logs training returns and held-out means."""

        def __init__(self) -> None:
            super().__init__()
            self.returns: list[float] = []
            self.next_eval = args.eval_every

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.returns.append(float(info["episode"]["r"]))
            elapsed = time.perf_counter() - started
            if elapsed >= self.next_eval:
                self.next_eval += args.eval_every
                self._log(elapsed, held_out(self.model))
            return elapsed < args.minutes * 60

        def _log(self, elapsed: float, scores: list[float] | None) -> None:
            recent = self.returns[-40:]
            point = {
                "seconds": round(elapsed, 1),
                "steps": int(self.num_timesteps),
                "train_return_rmb": float(np.mean(recent)) / probe.reward_scale if recent else None,
                "held_out_mean_rmb": None if scores is None else float(np.mean(scores)),
            }
            curve.add(point)

    venv = make_vec_env(StoreEnv, n_envs=args.envs, seed=args.seed, env_kwargs=kwargs)
    if args.policy == "slots":
        policy: Any = SlotPolicy
        policy_kwargs: dict[str, Any] = {"width": 64, "prior": (level, args.prior)}
    else:
        policy, policy_kwargs = "MlpPolicy", {"net_arch": [128, 128]}
    model = PPO(
        policy, venv, n_steps=args.n_steps, batch_size=args.n_steps, n_epochs=4,
        learning_rate=args.lr, gamma=args.gamma, gae_lambda=0.9, ent_coef=args.ent_coef,
        seed=args.seed, device="cpu", verbose=0,
        policy_kwargs=policy_kwargs,
    )  # fmt: skip
    budget = Budget()
    model.learn(total_timesteps=10**9, callback=budget)
    train_seconds = time.perf_counter() - started
    model.save(args.out / "ppo")
    ppo = held_out(model)
    budget._log(train_seconds, ppo)

    results = {
        "scenario": args.scenario,
        "length": args.length,
        "train_seconds": round(train_seconds, 1),
        "tune_seconds": round(tune_seconds, 1),
        "policy": args.policy,
        "prior": args.prior if args.policy == "slots" else None,
        "ent_coef": args.ent_coef,
        "lr": args.lr,
        "n_steps": args.n_steps,
        "gamma": args.gamma,
        "train_steps": int(model.num_timesteps),
        **comparison(probe, test, "ppo", ppo, (count, level), means),
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(json.dumps({"means": results["means"], "ppo_vs": results["ppo_vs"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
