"""What the model-based routers ask of the base model (any transformers causal LM; needs the `train` extra): an
embedding of a text (its mean-pooled last hidden states) and the log-probability of label texts after a prompt,
normalised per token and calibrated against a content-free prompt.

Why both corrections: summed log-probabilities favour short labels (every token costs probability), and a small
model prefers some labels whatever the task says (a position or a frequent word); subtracting the score each label
gets for a content-free task ("N/A") removes that prior, as Zhao et al. (2021, "Calibrate before use") do."""

from __future__ import annotations

from typing import Any

CONTENT_FREE = "N/A"


def _device(model: Any) -> Any:
    return getattr(model, "device", None) or next(model.parameters()).device


def embed(model: Any, tokenizer: Any, texts: list[str], *, batch_size: int = 8, max_length: int = 512) -> Any:
    """One L2-normalised vector per text: the mean of the last layer's hidden states over its tokens."""
    import torch

    out = []
    side = tokenizer.padding_side
    tokenizer.padding_side = "right"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    try:
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(texts[start:start + batch_size], return_tensors="pt", padding=True, truncation=True,
                              max_length=max_length)
            batch = {k: v.to(_device(model)) for k, v in batch.items()}
            with torch.no_grad():
                hidden = model(**batch, output_hidden_states=True).hidden_states[-1].float()
            mask = batch["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            out.append(torch.nn.functional.normalize(pooled, dim=-1).cpu())
    finally:
        tokenizer.padding_side = side
    return torch.cat(out) if out else torch.zeros(0, 0)


def label_logprobs(model: Any, tokenizer: Any, prompt: str, labels: list[str]) -> list[float]:
    """The mean per-token log-probability of each label's tokens right after `prompt` (one batched forward pass)."""
    import torch

    prompt_ids = tokenizer(prompt, add_special_tokens=False).input_ids
    label_ids = [tokenizer(label, add_special_tokens=False).input_ids or [tokenizer.eos_token_id] for label in labels]
    seqs = [prompt_ids + ids for ids in label_ids]
    width = max(len(s) for s in seqs)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    input_ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=_device(model))
    attention = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=_device(model))
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention).logits.float()
    logprobs = torch.log_softmax(logits[:, :-1], dim=-1)
    out = []
    start = len(prompt_ids)
    for row, ids in enumerate(label_ids):
        positions = torch.arange(start - 1, start - 1 + len(ids), device=logprobs.device)
        picked = logprobs[row, positions, torch.tensor(ids, device=logprobs.device)]
        out.append(float(picked.mean()))
    return out


def chat_prompt(tokenizer: Any, text: str, answer_prefix: str = "") -> str:
    """`text` as the user turn of the model's chat template (when it has one), the assistant's answer begun."""
    if getattr(tokenizer, "chat_template", None):
        rendered = tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                 add_generation_prompt=True)
        return rendered + answer_prefix
    return f"{text}\n{answer_prefix}"
