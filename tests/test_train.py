"""GRPO + LoRA through the TRL bridge on CPU with the `tiny` model (scripted completions so that rewards differ inside
each group, as TRL's own tests stand in for generation), the SFT warm start, saving, configs and the preflight."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

pytest.importorskip("trl")
pytest.importorskip("peft")
gym = pytest.importorskip("gymnasium")

from _doubles import TOY_ENV_ID, OracleScript, register_toy, scripted_trainer_class  # noqa: E402

import trace_envs  # noqa: E402,F401
from adapters_train.config import make_grpo_config, make_lora_config  # noqa: E402
from adapters_train.grpo import train_grpo  # noqa: E402
from adapters_train.models import ToolTemplateError, build_tiny, prepare_tokenizer, save_adapter  # noqa: E402
from trace_envs.training import TrainConfig, load_config  # noqa: E402

register_toy()
GENERATED = sorted(k for k in gym.registry if k.startswith("trace/"))
ENV = GENERATED[0] if GENERATED else TOY_ENV_ID


def _lora_tensors(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / "adapter_model.safetensors"))


def test_grpo_two_steps_tiny_saves_a_trained_adapter(tmp_path: Path) -> None:
    import torch
    from peft import PeftModel

    cfg = TrainConfig(env_id=ENV, model="tiny", out=str(tmp_path), steps=2, num_generations=4, learning_rate=1e-3,
                      max_completion_length=1024)
    script = OracleScript(ENV, range(cfg.steps))
    res = train_grpo(cfg, trainer_cls=scripted_trainer_class(script))
    assert res.steps == 2
    assert res.informative == [1.0, 1.0]  # every group mixes oracle and junk completions
    assert 0.0 < res.final_reward < 1.0
    out = res.adapter_dir
    assert out == tmp_path / ENV.split("/")[-1]
    assert {"adapter_config.json", "adapter_model.safetensors", "README.md", "trace_adapter.json"} <= set(
        p.name for p in out.iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp dirs left behind
    meta = json.loads((out / "trace_adapter.json").read_text())
    spec_hash = gym.make(ENV).unwrapped.capability.spec_hash
    assert meta["env_id"] == ENV and meta["spec_hash"] == spec_hash and meta["steps"] == 2
    card = (out / "README.md").read_text()
    for needle in (ENV, spec_hash, "| steps | 2 |", f"| final_reward | {res.final_reward} |", "base_model: tiny"):
        assert needle in card
    # Reload with PEFT: the LoRA B matrices start at zero; after training they must not be.
    base = build_tiny().model
    model = PeftModel.from_pretrained(base, str(out))
    b = [p for n, p in model.named_parameters() if "lora_B" in n]
    assert b and any(float(p.abs().max()) > 0 for p in b)
    saved = _lora_tensors(out)
    assert any("lora_B" in k and float(v.abs().max()) > 0 for k, v in saved.items())
    # Every linear layer carries LoRA (target_modules="all-linear", r=16).
    cfgj = json.loads((out / "adapter_config.json").read_text())
    assert cfgj["r"] == 16
    covered = {m.rsplit(".", 1)[-1] for m in cfgj["target_modules"]}
    assert {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"} <= covered
    fresh = PeftModel.from_pretrained(build_tiny().model, str(out))
    x = torch.tensor([[1, 2, 3, 4]])
    assert not torch.allclose(fresh(x).logits, build_tiny().model(x).logits)
    # Every trainer log is in the metrics file (not on the console), and the reward curve is drawn.
    name = ENV.split("/")[-1]
    assert res.metrics_path == tmp_path / f"{name}.metrics.jsonl" and res.curve_path == tmp_path / f"{name}.reward.png"
    rows = [json.loads(line) for line in res.metrics_path.read_text().splitlines()]
    steps = [r for r in rows if r["phase"] == "grpo" and "reward" in r]
    assert [r["step"] for r in steps] == [1, 2] and [r["reward"] for r in steps] == res.rewards
    assert res.curve_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_grpo_hints_a_share_of_each_group_and_computes_the_loss_on_the_plain_prompt(tmp_path: Path) -> None:
    """The paper's hint swap: `hint_fraction` of every group's rollouts generate with the hint in the system prompt;
    no token the loss is computed on (prompt or completion) carries it; metrics report hinted and plain apart."""
    from trl import GRPOTrainer

    from adapters_train.hints import hinted_count

    env = gym.make(TOY_ENV_ID).unwrapped
    hint = env.hint_text
    assert hint
    seen: list[bool] = []  # per rollout of the first turn, whether generation saw the hint
    loss_texts: list[str] = []

    class Recording(GRPOTrainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            tok = self._tokenizer
            for ids in (*inputs["prompt_ids"], *inputs["completion_ids"]):
                loss_texts.append(tok.decode([int(t) for t in ids], skip_special_tokens=False))
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

    oracle = OracleScript(TOY_ENV_ID, range(3))

    def script(text: str, index: int) -> str:
        if text.count("<|im_start|>assistant") == 1:  # the first turn of a rollout
            seen.append(hint in text)
        return oracle(text, index)

    g, fraction = 4, 0.5
    cfg = TrainConfig(env_id=TOY_ENV_ID, model="tiny", out=str(tmp_path), steps=3, num_generations=g,
                      learning_rate=1e-3, max_completion_length=1024, hint_fraction=fraction)
    res = train_grpo(cfg, trainer_cls=scripted_trainer_class(script, base=Recording))
    k = hinted_count(g, fraction)
    assert k == 2 and len(seen) == 3 * g
    assert [sum(seen[i:i + g]) for i in range(0, len(seen), g)] == [k, k, k]  # the hinted share of every group
    assert loss_texts and not any(hint in t or "# Hint" in t for t in loss_texts)
    assert any("You are a customer service agent" in t for t in loss_texts)  # the plain system prompt is there
    rows = [json.loads(line) for line in res.metrics_path.read_text().splitlines()]
    steps = [r for r in rows if "hints/hinted_share" in r]
    assert [r["hints/hinted_share"] for r in steps] == [k / g] * 3
    assert all("hints/reward_hinted" in r and "hints/reward_plain" in r for r in steps)
    meta = json.loads((res.adapter_dir / "trace_adapter.json").read_text())
    assert meta["hint_fraction"] == fraction and meta["hinted_per_group"] == k


def test_hinted_count_is_a_share_of_the_group_and_never_all_of_it() -> None:
    from adapters_train.hints import hinted_count, hinted_prompt

    assert [hinted_count(16, f) for f in (0.0, 0.25, 0.375, 0.5)] == [0, 4, 6, 8]
    assert hinted_count(2, 0.25) == 1 and hinted_count(2, 0.9) == 1 and hinted_count(1, 0.5) == 0
    plain = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert hinted_prompt(plain, "H") == [{"role": "system", "content": "S\n\n# Hint\nH"}, plain[1]]
    assert plain[0]["content"] == "S"  # the row is left as it was


def test_sft_warm_start_then_grpo_continues_the_adapter(tmp_path: Path) -> None:
    from adapters_train.sft import oracle_sft_dataset

    loaded = build_tiny()
    ds = oracle_sft_dataset(TOY_ENV_ID, range(2), loaded.tokenizer)
    row = ds[0]
    masked = loaded.tokenizer.decode([t for t, m in zip(row["input_ids"], row["assistant_masks"]) if m])
    assert "<tool_call>" in masked and "send_message_to_user" in masked and masked.rstrip().endswith("<|im_end|>")
    assert "<tool_response>" not in masked and "You are a customer service agent" not in masked

    cfg = TrainConfig(env_id=TOY_ENV_ID, model="tiny", out=str(tmp_path), steps=1, num_generations=2,
                      learning_rate=1e-3, max_completion_length=1024, warm_start=True, sft_episodes=4, sft_epochs=1)
    res = train_grpo(cfg, trainer_cls=scripted_trainer_class(OracleScript(TOY_ENV_ID, range(1))))
    assert res.sft_dir == tmp_path / "confirm_refund-sft"
    assert json.loads((res.sft_dir / "trace_adapter.json").read_text())["method"] == "sft"
    meta = json.loads((res.adapter_dir / "trace_adapter.json").read_text())
    assert meta["method"] == "grpo+sft" and meta["warm_start"] == str(res.sft_dir)
    phases = [json.loads(line)["phase"] for line in res.metrics_path.read_text().splitlines()]
    assert phases[0] == "sft" and phases[-1] == "grpo" and set(phases) == {"sft", "grpo"}  # one file, both phases


def test_sft_sequences_are_as_long_as_the_episodes_within_the_model_context() -> None:
    """A mined env's prompt carries the whole policy: a fixed cut before the first assistant turn would leave every
    episode fully masked (TRL then drops them all and fails with num_samples=0)."""
    from datasets import Dataset

    from adapters_train.sft import fit_to_length, sequence_length

    rows = Dataset.from_list([
        {"input_ids": list(range(10)), "assistant_masks": [0] * 6 + [1] * 4},
        {"input_ids": list(range(7)), "assistant_masks": [0] * 3 + [1] * 4},
    ])
    model = build_tiny().model  # a 16,384-token context
    assert sequence_length(TrainConfig(), model, rows) == 10
    assert sequence_length(TrainConfig(sft={"max_length": 5}), model, rows) == 5
    model.config.max_position_embeddings = 8
    assert sequence_length(TrainConfig(), model, rows) == 8
    assert len(fit_to_length(rows, 10, "trace/x")) == 2
    assert fit_to_length(rows, 4, "trace/x")["input_ids"] == [list(range(7))]  # the one with an assistant token left
    with pytest.raises(ValueError, match=r"trace/x: no oracle episode has an assistant token within the SFT sequence "
                                         r"length of 3 tokens \(the earliest assistant turn starts at token 3\)"):
        fit_to_length(rows, 3, "trace/x")


def test_the_rollout_budget_fits_the_oracle_episode_and_a_short_one_warns(capsys: pytest.CaptureFixture) -> None:
    """TRL counts tool results and user replies in a rollout's completion and cuts it at max_completion_length: a
    budget below the oracle's episode means no rollout can finish, and GRPO sees only zeros."""
    from adapters_train.grpo import completion_budget
    from adapters_train.sft import oracle_lengths

    tok = build_tiny().tokenizer
    needed, turn = oracle_lengths(ENV, range(8), tok)
    assert 0 < turn < needed
    total, per_turn = completion_budget(TrainConfig(env_id=ENV), tok)
    assert total % 64 == 0 and needed * 1.25 <= total < needed * 1.25 + 64
    assert per_turn % 64 == 0 and turn * 1.25 <= per_turn < turn * 1.25 + 64
    assert completion_budget(TrainConfig(env_id=ENV, max_completion_length=needed), tok)[0] == needed
    assert "warning" not in capsys.readouterr().err
    assert completion_budget(TrainConfig(env_id=ENV, max_completion_length=needed - 1), tok)[0] == needed - 1
    err = capsys.readouterr().err
    assert f"max_completion_length {needed - 1} is below the {needed} tokens the oracle episodes of {ENV}" in err


def test_save_adapter_is_atomic_and_replaces(tmp_path: Path) -> None:
    class FakeModel:
        def __init__(self, boom: bool = False) -> None:
            self.boom = boom

        def save_pretrained(self, d: Path) -> None:
            Path(d).mkdir(parents=True, exist_ok=True)  # as PEFT does: the folder may already exist
            (Path(d) / "adapter_model.safetensors").write_text("w")
            if self.boom:
                raise KeyboardInterrupt

    target = tmp_path / "cap"
    save_adapter(FakeModel(), None, target, {"env_id": "trace/cap", "steps": 1})
    assert (target / "README.md").is_file()
    with pytest.raises(KeyboardInterrupt):
        save_adapter(FakeModel(boom=True), None, target, {"env_id": "trace/cap", "steps": 2})
    assert json.loads((target / "trace_adapter.json").read_text())["steps"] == 1  # old adapter intact
    save_adapter(FakeModel(), None, target, {"env_id": "trace/cap", "steps": 3})
    assert json.loads((target / "trace_adapter.json").read_text())["steps"] == 3
    assert [p.name for p in tmp_path.iterdir()] == ["cap"]


def test_config_file_reaches_every_trl_option(tmp_path: Path) -> None:
    path = tmp_path / "train.yaml"
    path.write_text(
        "steps: 7\nnum_generations: 4\nbeta: 0.04\ngrpo:\n  use_vllm: false\n  vllm_mode: server\n"
        "  gradient_accumulation_steps: 2\nlora:\n  r: 8\nsft:\n  max_length: 1024\n"
    )
    cfg = load_config(path, env_id="trace/x", learning_rate=3e-5, steps=None)
    assert cfg.steps == 7 and cfg.num_generations == 4 and cfg.learning_rate == 3e-5
    args = make_grpo_config(cfg, tmp_path / "o", max_turns=12)
    assert args.beta == 0.04 and args.vllm_mode == "server" and args.gradient_accumulation_steps == 2
    assert args.max_steps == 7 and args.num_generations == 4 and args.max_tool_calling_iterations == 12
    assert make_lora_config(cfg).r == 8
    assert make_lora_config(TrainConfig()).r == 16 and make_lora_config(TrainConfig()).target_modules == "all-linear"
    (tmp_path / "bad.json").write_text(json.dumps({"grpo": {"not_an_option": 1}}))
    with pytest.raises(ValueError, match="not_an_option"):
        make_grpo_config(load_config(tmp_path / "bad.json"), tmp_path / "o")


def test_chat_template_preflight() -> None:
    tok = build_tiny().tokenizer
    tok.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    tok.response_template = None
    with pytest.raises(ToolTemplateError, match="--chat-template qwen2_5"):
        prepare_tokenizer(tok)
    prepare_tokenizer(tok, chat_template="qwen2_5")
    assert getattr(tok, "response_template", None) or getattr(tok, "response_schema", None)
    with pytest.raises(ToolTemplateError, match="unknown chat template"):
        prepare_tokenizer(tok, chat_template="no_such_template")


def test_train_cli_rejects_missing_env() -> None:
    from typer.testing import CliRunner

    from trace_envs.cli import _load_commands, app

    _load_commands()
    result = CliRunner().invoke(app, ["train", "trace/does_not_exist", "--model", "tiny"])
    assert result.exit_code == 2
    result = CliRunner().invoke(app, ["train"])
    assert result.exit_code == 2
