"""`merchantbench.pettingzoo`: PettingZoo's own API and seed tests, a market played to its
horizon (truncation) and a merchant's closure (termination), rewards per window summing to each
merchant's gain, the order of the action dict changing nothing, a one-merchant market giving
the Gymnasium env's state hash, and garbage or calls after a merchant's own `end_of_step`
answering structured errors that change nothing."""

from __future__ import annotations

import json
import warnings
from typing import Any

from frontend_script import SCENARIO, action_script
from requires import need

need("pettingzoo", module=True)

from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402

from merchantbench.gym import MerchantBenchEnv  # noqa: E402
from merchantbench.pettingzoo import MerchantBenchParallelEnv, parallel_env  # noqa: E402

SEED = 5
# Gymnasium samples `args` (a Text space as long as four memory documents, of 63k characters)
# slowly: 0.2 s a sample at the default 256 KiB, 0.04 s at 64 bytes, against a few ms for the
# env's step. A short memory document keeps PettingZoo's random tests affordable.
SHORT_ARGS = ("tools.memory_doc_bytes=64",)


def call(env: MerchantBenchParallelEnv, tool: str, **args: Any) -> dict[str, Any]:
    return {"tool": env.tool_names.index(tool), "args": json.dumps(args)}


def end(env: MerchantBenchParallelEnv) -> dict[str, Any]:
    return call(env, "end_of_step")


def test_pettingzoos_parallel_api_test_passes_without_a_warning() -> None:
    env = MerchantBenchParallelEnv(SCENARIO, ["alice", "bob", "carol"], overrides=SHORT_ARGS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(env, num_cycles=40)
    assert env.agents == env.possible_agents == ["alice", "bob", "carol"]


def test_pettingzoos_parallel_seed_test_passes() -> None:
    parallel_seed_test(
        lambda: parallel_env(scenario=SCENARIO, merchants=2, overrides=SHORT_ARGS), num_cycles=50
    )


def _listings(env: MerchantBenchParallelEnv, merchant: str, count: int) -> dict[str, Any]:
    surface = env.market.session(merchant).surface
    found = surface.call("search_products", {"sort": "sales_30d", "page_size": count})
    items = [{"product_id": r[0], "sale_price": round(r[3] * 1.6, 2)} for r in found["rows"]]
    return call(env, "list_product", items=items)


def test_a_market_plays_to_its_horizon_with_rewards_per_window() -> None:
    env = MerchantBenchParallelEnv(SCENARIO, ["lister", "idle"])
    obs, infos = env.reset(seed=SEED)
    assert set(obs) == set(infos) == {"idle", "lister"}
    assert all(obs[m] in env.observation_space(m) for m in obs)
    assert "OTHER MERCHANTS" in infos["lister"]["brief"]
    start = {m: float(obs[m]["store"]["net_assets"][0]) for m in obs}
    listing = _listings(env, "lister", 5)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    steps = 0
    while env.agents:
        actions = {m: end(env) for m in env.agents}
        if steps == 0:
            actions["lister"] = listing  # lists in window 0; idle closes at once
        obs, rewards, terminations, truncations, infos = env.step(actions)
        assert set(rewards) == set(obs) == set(truncations)
        for merchant, reward in rewards.items():
            totals[merchant] += reward
            if reward:  # money moves only when the market's hours run
                assert infos[merchant]["tool"] == "end_of_step"
        assert not any(terminations.values())
        steps += 1
    assert all(truncations.values()) and env.agents == []
    windows = env.scenario.clock.windows
    assert steps == windows + 1  # the lister's window 0 took two steps
    for merchant in env.possible_agents:
        final = env.market.session(merchant).status().net_assets
        assert round(totals[merchant], 2) == round(final - start[merchant], 2)
    lister = env.market.session("lister").status()
    assert lister.orders_placed > 0 and totals["lister"] != totals["idle"]


def test_a_merchant_whose_store_closes_is_terminated_and_the_market_goes_on() -> None:
    # No cash and a deposit of 1 RMB: the first order the lister cannot procure is fined past
    # its deposit, and its store closes; the idle merchant lists nothing and trades on.
    overrides = ("money.initial_balance_fen=0", "money.initial_deposit_fen=100")
    env = MerchantBenchParallelEnv(SCENARIO, ["idle", "lister"], overrides=overrides)
    env.reset(seed=SEED)
    env.step({"lister": _listings(env, "lister", 10)})
    ended: dict[str, str] = {}
    while env.agents:
        live = list(env.agents)
        _, _, terminations, truncations, _ = env.step({m: end(env) for m in live})
        for merchant in live:
            if terminations[merchant] or truncations[merchant]:
                ended[merchant] = "terminated" if terminations[merchant] else "truncated"
                assert merchant not in env.agents
                if terminations[merchant]:
                    window_closed = env.market.window
    assert ended == {"lister": "terminated", "idle": "truncated"}
    assert window_closed < env.scenario.clock.windows  # closed before the horizon
    assert env.market.session("lister").status().store == "closed"


def _script_actions(env: MerchantBenchParallelEnv | MerchantBenchEnv) -> list[dict[str, Any]]:
    index = {name: i for i, name in enumerate(env.tool_names)}
    return [
        {"tool": index.get(tool, len(index)), "args": json.dumps(args)}
        for window in action_script(SEED)
        for tool, args in window
    ]


def test_a_one_merchant_market_gives_the_gymnasium_envs_state_hash() -> None:
    gym_env = MerchantBenchEnv(SCENARIO)
    zoo = MerchantBenchParallelEnv(SCENARIO, ["solo"])
    gym_obs, _ = gym_env.reset(seed=SEED)
    zoo_obs, _ = zoo.reset(seed=SEED)
    assert zoo_obs["solo"]["text"] == gym_obs["text"]
    for action in _script_actions(gym_env):
        gym_obs, reward, terminated, _, info = gym_env.step(action)
        zoo_obs, rewards, _, truncations, infos = zoo.step({"solo": action})
        assert infos["solo"]["result"] == info["result"] and rewards["solo"] == reward
        assert zoo_obs["solo"]["text"] == gym_obs["text"]
        assert truncations["solo"] == terminated
    assert zoo.agents == [] and zoo.state_hash() == gym_env.state_hash()


def _play_market(order: list[str]) -> tuple[str, list[Any]]:
    """Three merchants play the script (with refused calls and writes), each with its own
    listings; the action dict is built in `order`."""
    env = MerchantBenchParallelEnv(SCENARIO, ["a", "b", "c"])
    env.reset(seed=SEED)
    script = _script_actions(env)
    lists = {m: _listings(env, m, n) for m, n in (("a", 3), ("b", 5), ("c", 4))}
    seen: list[Any] = []
    for step, action in enumerate([lists["a"], *script]):
        per = {"a": action, "b": lists["b"] if step == 0 else action, "c": action}
        if step % 7 == 3:
            per["c"] = end(env)  # c closes early and waits: its later calls are refused
        out = env.step({m: per[m] for m in order if m in env.agents})
        seen.append(json.dumps([out[1], out[2], out[3], out[4]], sort_keys=True, default=str))
        if not env.agents:
            break
    return env.state_hash(), seen


def test_the_order_of_the_action_dict_changes_nothing() -> None:
    first_hash, first = _play_market(["a", "b", "c"])
    for order in (["c", "b", "a"], ["b", "c", "a"]):
        state_hash, seen = _play_market(order)
        assert state_hash == first_hash and seen == first


def test_garbage_and_calls_after_end_of_step_answer_errors_and_change_nothing() -> None:
    def market(noise: bool) -> tuple[MerchantBenchParallelEnv, list[dict[str, Any]]]:
        env = MerchantBenchParallelEnv(SCENARIO, ["rival", "noisy"])
        env.reset(seed=SEED)
        answers = []
        garbage: list[Any] = [
            "not an action",
            {"tool": 999, "args": "{}"},
            {"tool": "drop_database", "args": "{}"},
            call(env, "list_product", items="everything"),
            {"tool": env.tool_names.index("adjust_price"), "args": '{"product_id": '},
            {"tool": env.tool_names.index("write_memory_doc"), "args": "[1, 2]"},
        ]
        listing = _listings(env, "noisy", 3)
        rival = _listings(env, "rival", 3)
        env.step({"noisy": listing, "rival": rival})
        env.step({"noisy": end(env)})  # noisy closed window 0 and waits for rival
        for junk in garbage + [listing, call(env, "delist_product", product_ids=["x"])]:
            actions = {"rival": call(env, "query_balance")}
            if noise:
                actions["noisy"] = junk
            _, _, _, _, infos = env.step(actions)
            if noise:
                answers.append(infos["noisy"]["result"])
        for _ in range(3):  # later windows: garbage beside a rival that trades
            actions = {"rival": call(env, "query_balance")}
            if noise:
                actions["noisy"] = garbage[0]
            _, _, _, _, infos = env.step(actions)
            if noise:
                answers.append(infos["noisy"]["result"])
            env.step({m: end(env) for m in env.agents})
        return env, answers

    quiet, _ = market(noise=False)
    noisy, answers = market(noise=True)
    assert all(a["ok"] is False and a["error"]["code"] for a in answers)
    codes = [a["error"]["code"] for a in answers]
    # While it waits, a well-formed call is refused as `window_closed` (malformed input is
    # refused first, as such).
    assert codes[:8] == ["window_closed"] * 4 + ["invalid_json"] * 2 + ["window_closed"] * 2
    # It waits until the rival closes window 0; in later windows the garbage itself is refused.
    assert codes[8:] == ["window_closed", "unknown_tool", "unknown_tool"]
    # Calls are counted per window and reset when it closes, so after the next close nothing
    # of the noise is left: the same market and store as a merchant who sent nothing.
    assert noisy.state_hash() == quiet.state_hash()
    assert noisy.market.session("noisy").status() == quiet.market.session("noisy").status()


# --- one core: the Gymnasium env is the market of one of the same env --------------------------
def test_the_gymnasium_and_pettingzoo_envs_are_views_of_one_core() -> None:
    from gymnasium import Env
    from pettingzoo import ParallelEnv

    from merchantbench.market_env import MarketEnv

    assert issubclass(MerchantBenchEnv, MarketEnv) and issubclass(
        MerchantBenchParallelEnv, MarketEnv
    )
    assert not issubclass(MerchantBenchEnv, ParallelEnv)
    assert not issubclass(MerchantBenchParallelEnv, Env)
    gym_env, zoo = MerchantBenchEnv(SCENARIO), MerchantBenchParallelEnv(SCENARIO, ["solo"])
    gym_env.reset(seed=SEED)
    zoo.reset(seed=SEED)
    # Neither holds the other: each steps the market itself.
    for env, other in ((gym_env, MerchantBenchParallelEnv), (zoo, MerchantBenchEnv)):
        assert not any(isinstance(value, other) for value in vars(env).values())
    assert type(gym_env.market) is type(zoo.market)


def _play_recorded(env: MerchantBenchEnv | MerchantBenchParallelEnv, merchant: str | None) -> None:
    if merchant is None:
        assert isinstance(env, MerchantBenchEnv)
        env.reset(seed=SEED)
    else:
        env.reset(seed=SEED)
    for action in _script_actions(env):
        if merchant is None:
            env.step(action)  # type: ignore[arg-type]
        elif env.agents:
            env.step({merchant: action})  # type: ignore[dict-item]
    env.close()


def test_a_market_of_one_records_the_run_the_gymnasium_env_records(tmp_path) -> None:
    gym_env = MerchantBenchEnv(SCENARIO, record_dir=tmp_path / "gym")
    zoo = MerchantBenchParallelEnv(SCENARIO, ["store"], record_dir=tmp_path / "zoo")
    _play_recorded(gym_env, None)
    _play_recorded(zoo, "store")
    gym_run, zoo_run = tmp_path / "gym" / "episode-0001", tmp_path / "zoo" / "episode-0001"
    files = sorted(p.relative_to(gym_run).as_posix() for p in gym_run.rglob("*") if p.is_file())
    assert "trace.jsonl" in files and "metrics.json" in files
    for name in ("trace.jsonl", "transcript.jsonl", "metrics.json", "orders.parquet"):
        assert (gym_run / name).read_bytes() == (zoo_run / name).read_bytes(), name
    assert zoo.state_hash() == gym_env.state_hash()


def test_a_recorded_market_is_an_arena_record_that_verifies(tmp_path) -> None:
    """A market of several records through the one lifecycle as `merchantbench arena` does
    (arena.json, one run record per merchant); `verify` replays it whole and agrees."""
    from merchantbench.record.arena import read_arena
    from merchantbench.replay.evidence import check_market

    env = MerchantBenchParallelEnv(SCENARIO, ["lister", "idle"], record_dir=tmp_path)
    env.reset(seed=SEED)
    arena_dir = env.run_dir
    assert arena_dir is not None and arena_dir.parent == tmp_path
    script = action_script(SEED)
    window = 0
    while env.agents:
        lister = [
            {"tool": t, "args": json.dumps(a)} for t, a in script[min(window, len(script) - 1)]
        ]
        for call in lister:
            if not env.agents:
                break
            actions = {m: call if m == "lister" else {"tool": "query_balance", "args": "{}"}
                       for m in env.agents}  # fmt: skip
            env.step(actions)
        if env.agents:
            env.step({m: {"tool": "end_of_step", "args": "{}"} for m in env.agents})
        window += 1
    arena = read_arena(arena_dir)
    assert arena.ended == "completed"
    assert sorted(m.id for m in arena.merchants) == ["idle", "lister"]
    assert arena.state_hash == env.market.state_hash()
    for merchant in ("lister", "idle"):
        record = arena_dir / "merchants" / merchant
        assert json.loads((record / "run.json").read_text())["driver"] == "gym"
        assert (record / "metrics.json").is_file()
    verdicts = check_market(arena_dir)
    statuses = {m: (v.status, v.detail) for m, v in verdicts.items()}
    assert all(status == "verified" for status, _ in statuses.values()), statuses
    from typer.testing import CliRunner

    from merchantbench.cli import app

    verified = CliRunner().invoke(app, ["verify", str(arena_dir)])
    assert verified.exit_code == 0, verified.output
    lines = verified.output.splitlines()  # a line each: every merchant's replay, its signature
    assert sorted(line.split(":")[0] for line in lines) == ["idle", "idle", "lister", "lister"]
    assert sum(line.count("verified (") for line in lines) == 2


def test_a_market_of_several_refuses_a_later_start_day(tmp_path) -> None:
    import pytest

    with pytest.raises(ValueError, match="opens on day 0"):
        MerchantBenchParallelEnv(SCENARIO, 2, length=3, start_day=2)
    env = MerchantBenchParallelEnv(SCENARIO, 2, length=3)
    with pytest.raises(ValueError, match="opens on day 0"):
        env.reset(seed=SEED, options={"start_day": 1})


def test_a_market_plays_training_episodes_with_rewards_at_the_end() -> None:
    env = MerchantBenchParallelEnv(SCENARIO, ["lister", "idle"], length=6, reward="end")
    env.reset(seed=SEED)
    start = {m: env.market.session(m).status().net_assets for m in env.possible_agents}
    env.step({"lister": _listings(env, "lister", 4)})
    paid: dict[str, list[int]] = {m: [] for m in env.possible_agents}
    rewards_seen: dict[str, list[float]] = {m: [] for m in env.possible_agents}
    while env.agents:
        _, rewards, _, _, infos = env.step({m: end(env) for m in env.agents})
        for merchant, info in infos.items():
            paid[merchant].append(info["reward_fen"])
            rewards_seen[merchant].append(rewards[merchant])
    assert env.market.window == 12  # six days of two windows
    for merchant in env.possible_agents:
        change = env.market.session(merchant).status().net_assets - start[merchant]
        assert all(r == 0 for r in paid[merchant][:-1])  # "end": all on the last step
        assert paid[merchant][-1] == round(change * 100)
        assert rewards_seen[merchant][-1] == paid[merchant][-1] / 100
    assert paid["lister"][-1] != 0


def test_restoring_a_market_rewinds_every_merchant_and_its_rewards() -> None:
    def play(env: MerchantBenchParallelEnv, windows: int) -> list[Any]:
        seen = []
        for _ in range(windows):
            out = env.step({m: end(env) for m in env.agents})
            seen.append(json.dumps([out[1], out[4]], sort_keys=True, default=str))
        return seen

    env = MerchantBenchParallelEnv(SCENARIO, ["a", "b"])
    env.reset(seed=SEED)
    env.step({"a": _listings(env, "a", 3), "b": _listings(env, "b", 2)})
    play(env, 2)
    blob = env.market.snapshot()
    first, first_hash = play(env, 4), env.state_hash()
    env.restore(blob)
    assert play(env, 4) == first and env.state_hash() == first_hash


def test_a_sealed_market_plays_sealed_seeds() -> None:
    env = MerchantBenchParallelEnv(SCENARIO, 2, sealed=True)
    env.reset(seed=3)
    sealed_hash = env.state_hash()
    revealed = env.reveal()
    assert revealed.seed >= 2**64 and len(env.seed_commitment) == 64
    env.reset(seed=3)
    assert env.state_hash() == sealed_hash
    public = MerchantBenchParallelEnv(SCENARIO, 2)
    public.reset(seed=revealed.seed)
    assert public.state_hash() == sealed_hash


def test_both_envs_ask_for_reset_before_a_step() -> None:
    import pytest

    gym_env, zoo = MerchantBenchEnv(SCENARIO), MerchantBenchParallelEnv(SCENARIO, 2)
    for step in (lambda: gym_env.step(end(zoo)), lambda: zoo.step({})):
        with pytest.raises(RuntimeError, match="reset"):
            step()
