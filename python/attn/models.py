"""Hugging Face checkpoints on attn's layer runtime.

    stack = attn.TransformerStack.from_pretrained("path/to/model")
    hidden = stack.forward(stack.embed(input_ids))       # [B, L, d_model]
    stack.reset(); stack.forward(prompt); stack.forward(next_token)  # decoding

`from_pretrained` reads `config.json` and `model.safetensors`, maps the
config onto a layer spec (docs/Transformer.md) and the tensor names onto
attn's, compiles the layer artifact (cached like every kernel) and loads the
weights into an `attn_stack` of the C API. The embeddings (and a decoder's
LM head) stay outside the stack, in NumPy: `embed(ids)` gives the stack's
input, `logits(hidden)` a decoder's next-token scores.

Families: BERT and RoBERTa (post-norm encoders; the output is
`last_hidden_state`), GPT-2 (pre-norm decoder, tanh GELU, learned
positions, fused Conv1D weights), Llama, Mistral and Qwen2 (pre-RMSNorm
decoders, RoPE, GQA, SwiGLU; Qwen2's q/k/v biases, with zero biases for
the maps that have none). Refused with a message: other model types,
rope scaling, Mistral / Qwen2 sliding windows, attention dropout at
inference is ignored as in PyTorch's eval mode.
"""

import json
import os

import numpy as np

from . import _attn
from ._compiler import compile_source


class UnsupportedModel(ValueError):
    """The checkpoint is of a family or has a feature attn does not map."""


def _load_tensors(path):
    files = [os.path.join(path, "model.safetensors")]
    index = os.path.join(path, "model.safetensors.index.json")
    if not os.path.exists(files[0]) and os.path.exists(index):
        with open(index) as f:
            files = sorted({os.path.join(path, v) for v in json.load(f)["weight_map"].values()})
    if not os.path.exists(files[0]):
        raise FileNotFoundError(f"{path}: no model.safetensors (attn reads safetensors "
                                "checkpoints; save_pretrained writes them)")
    from safetensors.numpy import load_file
    tensors = {}
    for name in files:
        try:
            tensors.update(load_file(name))
        except TypeError:  # bf16 checkpoints: NumPy has no bfloat16
            import torch
            from safetensors.torch import load_file as load_torch
            tensors.update({k: v.float().numpy() for k, v in load_torch(name).items()})
    # Checkpoints saved from a task model prefix the base model's names.
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()}


def _strip(tensors, prefixes):
    out = {}
    for name, value in tensors.items():
        for prefix in prefixes:
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        out[name] = value
    return out


def _spec_text(name, layer):
    lines = [f"name: {name}", "dtype: f32", "layer:"]
    for key, value in layer.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, float):
            value = repr(value)
        lines.append(f"  {key}: {value}")
    return "\n".join(lines) + "\n"


# --- the families -------------------------------------------------------------------

def _bert(config, t):
    t = _strip(t, ["bert.", "roberta."])
    d, layers = config["hidden_size"], config["num_hidden_layers"]
    act = config.get("hidden_act", "gelu")
    if act not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        raise UnsupportedModel(f"BERT activation {act}")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise UnsupportedModel("BERT position_embedding_type other than absolute")
    layer = dict(type="encoder", d_model=d, heads=config["num_attention_heads"],
                 ffn_hidden=config["intermediate_size"],
                 activation="gelu" if act == "gelu" else "gelu_tanh",
                 norm="layernorm", norm_position="post",
                 norm_eps=float(config.get("layer_norm_eps", 1e-12)), bias=True,
                 layers=layers, positions="none")
    w = {}
    for i in range(layers):
        p, q = f"encoder.layer.{i}.", f"layers.{i}."
        for ours, theirs in (("self_attn.q_proj", "attention.self.query"),
                             ("self_attn.k_proj", "attention.self.key"),
                             ("self_attn.v_proj", "attention.self.value"),
                             ("self_attn.o_proj", "attention.output.dense"),
                             ("norm1", "attention.output.LayerNorm"),
                             ("linear1", "intermediate.dense"),
                             ("linear2", "output.dense"),
                             ("norm2", "output.LayerNorm")):
            w[q + ours + ".weight"] = t[p + theirs + ".weight"]
            w[q + ours + ".bias"] = t[p + theirs + ".bias"]
    # RoBERTa numbers positions from padding_idx + 1 and gives padding
    # tokens the position padding_idx (transformers'
    # create_position_ids_from_input_ids).
    pad = config.get("pad_token_id", 1) if config.get("model_type") == "roberta" else None
    embed = dict(words=t["embeddings.word_embeddings.weight"],
                 positions=t["embeddings.position_embeddings.weight"], padding_idx=pad,
                 token_types=t.get("embeddings.token_type_embeddings.weight"),
                 norm=(t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"],
                       float(config.get("layer_norm_eps", 1e-12))))
    return layer, w, embed, None


def _gpt2(config, t):
    t = _strip(t, ["transformer."])
    d, layers = config["n_embd"], config["n_layer"]
    act = config.get("activation_function", "gelu_new")
    if act not in ("gelu_new", "gelu_pytorch_tanh", "gelu"):
        raise UnsupportedModel(f"GPT-2 activation {act}")
    if config.get("scale_attn_by_inverse_layer_idx") or not config.get("scale_attn_weights", True):
        raise UnsupportedModel("GPT-2 attention scaling other than 1/sqrt(head_dim)")
    layer = dict(type="decoder", d_model=d, heads=config["n_head"],
                 ffn_hidden=config.get("n_inner") or 4 * d,
                 activation="gelu" if act == "gelu" else "gelu_tanh", norm="layernorm",
                 norm_position="pre", norm_eps=float(config.get("layer_norm_epsilon", 1e-5)),
                 bias=True, layers=layers, cross_attention=False, final_norm=True,
                 positions="learned", max_positions=config["n_positions"])
    w = {"pos_embedding": t["wpe.weight"], "final_norm.weight": t["ln_f.weight"],
         "final_norm.bias": t["ln_f.bias"]}
    for i in range(layers):
        p, q = f"h.{i}.", f"layers.{i}."
        qkv_w, qkv_b = t[p + "attn.c_attn.weight"].T, t[p + "attn.c_attn.bias"]  # Conv1D: [in, out]
        for n, name in enumerate(("q_proj", "k_proj", "v_proj")):
            w[q + f"self_attn.{name}.weight"] = np.ascontiguousarray(qkv_w[n * d:(n + 1) * d])
            w[q + f"self_attn.{name}.bias"] = np.ascontiguousarray(qkv_b[n * d:(n + 1) * d])
        for ours, theirs in (("self_attn.o_proj", "attn.c_proj"), ("linear1", "mlp.c_fc"),
                             ("linear2", "mlp.c_proj")):
            w[q + ours + ".weight"] = np.ascontiguousarray(t[p + theirs + ".weight"].T)
            w[q + ours + ".bias"] = t[p + theirs + ".bias"]
        for ours, theirs in (("norm1", "ln_1"), ("norm2", "ln_2")):
            w[q + ours + ".weight"] = t[p + theirs + ".weight"]
            w[q + ours + ".bias"] = t[p + theirs + ".bias"]
    embed = dict(words=t["wte.weight"])
    head = t.get("lm_head.weight", t["wte.weight"])
    return layer, w, embed, head


def _llama(config, t):
    t = _strip(t, ["model."])
    d, layers = config["hidden_size"], config["num_hidden_layers"]
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or d // heads
    if config.get("hidden_act", "silu") != "silu":
        raise UnsupportedModel(f"activation {config.get('hidden_act')} (SwiGLU needs silu)")
    rope = config.get("rope_parameters") or {}
    if config.get("rope_scaling") or rope.get("rope_type", "default") != "default":
        raise UnsupportedModel("rope scaling (only default RoPE is mapped)")
    if config.get("use_sliding_window") or (config.get("model_type") == "mistral"
                                           and config.get("sliding_window")):
        raise UnsupportedModel("sliding-window attention (Mistral / Qwen2 sliding_window); "
                               "set sliding_window to null for sequences within the window")
    theta = float(rope.get("rope_theta", config.get("rope_theta", 10000.0)))
    qkv_bias = config.get("model_type") == "qwen2" or config.get("attention_bias", False)
    if config.get("mlp_bias"):
        raise UnsupportedModel("mlp_bias")
    layer = dict(type="decoder", d_model=d, heads=heads,
                 kv_heads=config.get("num_key_value_heads") or heads, head_dim=head_dim,
                 ffn_hidden=config["intermediate_size"], activation="swiglu", norm="rmsnorm",
                 norm_position="pre", norm_eps=float(config.get("rms_norm_eps", 1e-6)),
                 bias=bool(qkv_bias), layers=layers, cross_attention=False, final_norm=True,
                 positions="rope", rope_base=theta, rope_style="half")
    w = {"final_norm.weight": t["norm.weight"]}
    for i in range(layers):
        p, q = f"layers.{i}.", f"layers.{i}."
        for ours, theirs in (("self_attn.q_proj", "self_attn.q_proj"),
                             ("self_attn.k_proj", "self_attn.k_proj"),
                             ("self_attn.v_proj", "self_attn.v_proj"),
                             ("self_attn.o_proj", "self_attn.o_proj"),
                             ("linear_gate", "mlp.gate_proj"), ("linear1", "mlp.up_proj"),
                             ("linear2", "mlp.down_proj")):
            weight = t[p + theirs + ".weight"]
            w[q + ours + ".weight"] = weight
            if qkv_bias:
                # attn's `bias: true` gives every map a bias: zero where the
                # checkpoint has none (exact).
                w[q + ours + ".bias"] = t.get(p + theirs + ".bias",
                                              np.zeros(weight.shape[0], np.float32))
        w[q + "norm1.weight"] = t[p + "input_layernorm.weight"]
        w[q + "norm2.weight"] = t[p + "post_attention_layernorm.weight"]
    embed = dict(words=t["embed_tokens.weight"])
    head = t.get("lm_head.weight", t["embed_tokens.weight"] if config.get(
        "tie_word_embeddings") else None)
    return layer, w, embed, head


FAMILIES = {"bert": _bert, "roberta": _bert, "gpt2": _gpt2, "llama": _llama,
            "mistral": _llama, "qwen2": _llama}


class TransformerStack:
    """A Hugging Face model's layers on attn's layer runtime."""

    def __init__(self, layer, weights, embed, head, name="hf_stack"):
        self.layer = dict(layer)
        self.spec = _spec_text(name, layer)
        self.kernel = compile_source(self.spec, ".yaml", function=name)
        names = sorted(weights)
        self._stack = _attn.Stack(self.kernel._artifact, names, [weights[n] for n in names])
        self._embed, self._head = embed, head
        self.is_decoder = layer["type"] == "decoder"
        self._position = 0  # tokens seen since reset (decoders)

    @classmethod
    def from_pretrained(cls, path):
        with open(os.path.join(path, "config.json")) as f:
            config = json.load(f)
        kind = config.get("model_type")
        if kind not in FAMILIES:
            raise UnsupportedModel(f"{path}: model_type {kind!r} is not mapped (attn maps "
                                   f"{', '.join(sorted(FAMILIES))})")
        layer, weights, embed, head = FAMILIES[kind](config, _load_tensors(path))
        return cls(layer, weights, embed, head, name=f"hf_{kind}")

    def embed(self, input_ids, token_type_ids=None):
        """The stack's input for token ids [B, L] (NumPy or torch): the
        word embeddings, plus BERT's positions, token types and norm. A
        decoder's positions are added inside the stack."""
        ids = _numpy(input_ids).astype(np.int64)
        e = self._embed
        x = e["words"][ids]
        if "positions" in e:
            pad = e["padding_idx"]
            if pad is None:
                positions = np.arange(ids.shape[1])[None]
            else:
                real = ids != pad
                positions = np.cumsum(real, axis=1) * real + pad
            x = x + e["positions"][positions]
            types = e.get("token_types")
            if types is not None:
                tt = np.zeros_like(ids) if token_type_ids is None else _numpy(token_type_ids)
                x = x + types[tt]
            w, b, eps = e["norm"]
            mean = x.mean(-1, keepdims=True)
            var = ((x - mean) ** 2).mean(-1, keepdims=True)
            x = (x - mean) / np.sqrt(var + eps) * w + b
        return np.ascontiguousarray(x, dtype=np.float32)

    def _run(self, hidden_states, rank, shape_text, out, call):
        """Checks hidden_states (float32 NumPy or torch, d_model last),
        runs call(x, result) and returns result as the caller's kind."""
        x = _numpy(hidden_states)
        if x.ndim != rank or x.shape[-1] != self.layer["d_model"]:
            raise ValueError(f"hidden_states must be {shape_text}, got {tuple(x.shape)}")
        x = np.ascontiguousarray(x, dtype=np.float32)
        result = np.empty_like(x) if out is None else out
        call(x, result)
        if out is None and _is_torch(hidden_states):
            import torch
            return torch.from_numpy(result)
        return result

    def forward(self, hidden_states, out=None):
        """The stack on [B, L, d_model] (float32, NumPy or torch); a decoder
        continues its sequence until reset()."""
        d = self.layer["d_model"]
        result = self._run(hidden_states, 3, f"[batch, length, {d}]", out,
                           lambda x, y: self._stack.forward(x, None, y))
        self._position += result.shape[1]
        return result

    __call__ = forward

    def forward_packed(self, hidden_states, lengths, out=None):
        """Sequences of `lengths` packed one after the other in
        hidden_states [total, d_model] (FlashAttention's varlen layout, no
        padding): each sequence's rows as if it ran alone. A whole pass: a
        decoder must be reset and keeps no KV cache from it."""
        lengths = [int(n) for n in lengths]
        return self._run(hidden_states, 2, f"[total, {self.layer['d_model']}]", out,
                         lambda x, y: self._stack.forward_packed(x, lengths, y))

    def forward_padded(self, hidden_states, lengths, out=None):
        """Sequences padded in hidden_states [batch, length, d_model]:
        row b holds lengths[b] tokens, padding after them. The tokens run
        packed (no work on padding, which reaches no output); padding rows
        of the result are 0."""
        lengths = [int(n) for n in lengths]
        d = self.layer["d_model"]
        return self._run(hidden_states, 3, f"[batch, length, {d}]", out,
                         lambda x, y: self._stack.forward_padded(x, lengths, y))

    def add_sequence(self):
        """Continuous batching (a decoder): starts a live sequence with its
        own KV cache; returns its id."""
        return self._stack.add_sequence()

    def remove_sequence(self, sequence_id):
        """Ends a live sequence and frees its cache."""
        self._stack.remove_sequence(int(sequence_id))

    def step(self, ids, hidden_states, lengths, out=None):
        """One step of continuous batching: lengths[i] new tokens of live
        sequence ids[i], packed in hidden_states [total, d_model] (prompts,
        chunks of them and single decode tokens mixed); each sequence's
        rows equal decoding it alone."""
        ids = [int(i) for i in ids]
        lengths = [int(n) for n in lengths]
        return self._run(hidden_states, 2, f"[total, {self.layer['d_model']}]", out,
                         lambda x, y: self._stack.step(ids, x, lengths, y))

    def reset(self):
        """A new sequence: empties a decoder's KV cache."""
        self._stack.reset()
        self._position = 0

    def logits(self, hidden):
        """A decoder's next-token scores (the LM head, tied or not)."""
        if self._head is None:
            raise ValueError("this checkpoint has no LM head")
        return _numpy(hidden) @ self._head.T


def _is_torch(x):
    try:
        import torch
        return isinstance(x, torch.Tensor)
    except ImportError:
        return False


def _numpy(x):
    if _is_torch(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)
