"""A stable-baselines3 actor-critic for the classic store env (`rl.classic`) that decides per
slot with one shared network: every candidate slot's features, with the store's, go through the
same layers to that slot's markup logits, so what is learnt about one product (a low rating, a
short stock, a price rise) applies to every slot. The critic reads the store and the mean of the
slots' embeddings. Needs torch (the sb3 environment, `merchantbench.training_envs`).
"""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from merchantbench.rl.classic import GLOBAL, SLOT

__all__ = ["SlotPolicy"]


class _SlotExtractor(nn.Module):
    """Observation → (per-slot embeddings, flattened; the critic's latent)."""

    def __init__(self, slots: int, width: int) -> None:
        super().__init__()
        self.slots, self.width = slots, width
        self.latent_dim_pi = slots * width
        self.latent_dim_vf = width
        self.slot_net = nn.Sequential(
            nn.Linear(SLOT + GLOBAL, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh()
        )
        self.value_net = nn.Sequential(nn.Linear(width + GLOBAL, width), nn.Tanh())

    def _embed(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        store = obs[:, :GLOBAL]
        per = obs[:, GLOBAL:].reshape(-1, self.slots, SLOT)
        both = torch.cat([per, store.unsqueeze(1).expand(-1, self.slots, -1)], dim=2)
        return self.slot_net(both), store

    def forward_actor(self, obs: torch.Tensor) -> torch.Tensor:
        return self._embed(obs)[0].flatten(1)

    def forward_critic(self, obs: torch.Tensor) -> torch.Tensor:
        slots, store = self._embed(obs)
        return self.value_net(torch.cat([slots.mean(dim=1), store], dim=1))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        slots, store = self._embed(obs)
        critic = self.value_net(torch.cat([slots.mean(dim=1), store], dim=1))
        return slots.flatten(1), critic


class _SlotHead(nn.Module):
    """Per-slot embeddings → per-slot logits, one shared layer."""

    def __init__(self, slots: int, width: int, levels: int) -> None:
        super().__init__()
        self.slots, self.width = slots, width
        self.linear = nn.Linear(width, levels)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return self.linear(latent.reshape(-1, self.slots, self.width)).flatten(1)


class SlotPolicy(ActorCriticPolicy):
    """`PPO(SlotPolicy, env, policy_kwargs={"width": 64, "prior": (level, logit)})`: `prior`
    adds `logit` to one level's initial logit in every slot (e.g. the best constant's)."""

    def __init__(self, *args: Any, width: int = 64, prior: tuple[int, float] | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        self.width, self.prior = width, prior
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        slots = (self.observation_space.shape[0] - GLOBAL) // SLOT
        self.mlp_extractor = _SlotExtractor(slots, self.width)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        extractor = self.mlp_extractor
        levels = int(self.action_space.nvec[0])
        self.action_net = _SlotHead(extractor.slots, self.width, levels)
        nn.init.orthogonal_(self.action_net.linear.weight, gain=0.01)
        nn.init.zeros_(self.action_net.linear.bias)
        if self.prior is not None:
            with torch.no_grad():
                self.action_net.linear.bias[self.prior[0]] += self.prior[1]
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )
