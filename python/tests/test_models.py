"""TransformerStack.from_pretrained against transformers' own models, built
from configs with random weights and saved by save_pretrained."""

import numpy as np
import pytest
import torch

import attn

transformers = pytest.importorskip("transformers")

# The bar: 1e-4 against transformers on O(1) hidden states. attn's
# f32 products and norms differ from PyTorch's by ~1e-6 per layer; 1e-4
# leaves room for two layers and LayerNorm's amplification of small
# variances while catching any wrong weight mapping (errors of 1e-1).
TOL = 1e-4


def save(model, tmp_path):
    model.save_pretrained(tmp_path, safe_serialization=True)
    return str(tmp_path)


def ids(batch, length, vocab, seed=0):
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_bert_family(kind, tmp_path):
    config_class, model_class = ((transformers.BertConfig, transformers.BertModel)
                                 if kind == "bert" else
                                 (transformers.RobertaConfig, transformers.RobertaModel))
    config = config_class(vocab_size=120, hidden_size=64, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=128,
                          max_position_embeddings=80)
    torch.manual_seed(0)
    model = model_class(config, add_pooling_layer=False).eval()
    stack = attn.TransformerStack.from_pretrained(save(model, tmp_path))
    x = ids(2, 37, 120)
    with torch.no_grad():
        want = model(input_ids=x).last_hidden_state.numpy()
    got = stack.forward(stack.embed(x))
    assert np.abs(got - want).max() < TOL


def decode_check(model, stack, vocab, length=19, prompt=12):
    x = ids(1, length, vocab, seed=3)
    with torch.no_grad():
        want = model(input_ids=x).last_hidden_state.numpy()
    stack.reset()
    whole = stack.forward(stack.embed(x))
    assert np.abs(whole - want).max() < TOL
    stack.reset()
    parts = [stack.forward(stack.embed(x[:, :prompt]))]
    for t in range(prompt, length):
        parts.append(stack.forward(stack.embed(x[:, t:t + 1])))
    decoded = np.concatenate(parts, axis=1)
    assert np.abs(decoded - want).max() < TOL


def test_gpt2_with_incremental_decoding(tmp_path):
    config = transformers.GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4,
                                     n_positions=64)
    torch.manual_seed(0)
    model = transformers.GPT2Model(config).eval()
    stack = attn.TransformerStack.from_pretrained(save(model, tmp_path))
    decode_check(model, stack, 100)


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_llama_style_with_gqa_and_decoding(kind, tmp_path):
    config_class, model_class = ((transformers.LlamaConfig, transformers.LlamaModel)
                                 if kind == "llama" else
                                 (transformers.Qwen2Config, transformers.Qwen2Model))
    config = config_class(vocab_size=100, hidden_size=64, intermediate_size=160,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=64, rope_theta=500.0)
    torch.manual_seed(0)
    model = model_class(config).eval()
    if kind == "qwen2":  # give the q/k/v biases values, so a lost bias shows
        with torch.no_grad():
            for layer in model.layers:
                for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj,
                             layer.self_attn.v_proj):
                    proj.bias.normal_()
    stack = attn.TransformerStack.from_pretrained(save(model, tmp_path))
    decode_check(model, stack, 100)


def test_unsupported_model_type(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "t5"}')
    with pytest.raises(attn.UnsupportedModel, match="model_type 't5' is not mapped"):
        attn.TransformerStack.from_pretrained(str(tmp_path))


def test_wrong_hidden_size(tmp_path):
    config = transformers.GPT2Config(vocab_size=50, n_embd=32, n_layer=1, n_head=2,
                                     n_positions=16)
    stack = attn.TransformerStack.from_pretrained(save(transformers.GPT2Model(config), tmp_path))
    with pytest.raises(ValueError, match=r"\[batch, length, 32\]"):
        stack.forward(np.zeros((1, 4, 31), np.float32))


def test_decoder_batch_change_needs_reset(tmp_path):
    config = transformers.GPT2Config(vocab_size=50, n_embd=32, n_layer=1, n_head=2,
                                     n_positions=16)
    stack = attn.TransformerStack.from_pretrained(save(transformers.GPT2Model(config), tmp_path))
    stack.forward(stack.embed(ids(2, 5, 50)))
    with pytest.raises(ValueError, match="sequence in progress has 2"):
        stack.forward(stack.embed(ids(3, 1, 50)))
    stack.reset()
    assert stack.forward(stack.embed(ids(3, 1, 50))).shape == (3, 1, 32)


def test_poisoned_checkpoint_is_refused(tmp_path):
    # One NaN in a weight made every output NaN; the stack refuses it where
    # it is read, naming attn's tensor (GPT-2's c_fc is linear1).
    config = transformers.GPT2Config(vocab_size=50, n_embd=32, n_layer=1, n_head=2,
                                     n_positions=16)
    model = transformers.GPT2Model(config)
    with torch.no_grad():
        model.h[0].mlp.c_fc.weight[3, 5] = float("nan")
    with pytest.raises(ValueError, match=r"weight 'layers\.0\.linear1\.weight' has NaN at index"):
        attn.TransformerStack.from_pretrained(save(model, tmp_path))


def test_padded_sequences_equal_each_alone(tmp_path):
    # Padded [B, L, d] with per-sequence lengths: NaN in every padding row
    # reaches no output, padding rows of the result are 0, each sequence's
    # rows equal it alone (the packed bound, below).
    config = transformers.GPT2Config(vocab_size=50, n_embd=32, n_layer=2, n_head=2,
                                     n_positions=16)
    stack = attn.TransformerStack.from_pretrained(save(transformers.GPT2Model(config), tmp_path))
    lengths = [3, 7, 1, 5]
    seqs = [stack.embed(ids(1, n, 50, seed=n))[0] for n in lengths]
    padded = np.full((4, 7, 32), np.nan, np.float32)
    for b, s in enumerate(seqs):
        padded[b, :len(s)] = s
    out = stack.forward_padded(padded, lengths)
    for b, s in enumerate(seqs):
        stack.reset()
        alone = stack.forward(s[None])[0]
        assert np.abs(out[b, :len(s)] - alone).max() <= 1e-5 * np.abs(alone).max()
        assert (out[b, len(s):] == 0).all()
    with pytest.raises(ValueError, match="sequence 0 has length 8"):
        stack.forward_padded(padded, [8, 7, 1, 5])


def test_continuous_batching_equals_decoding_alone(tmp_path):
    # Live sequences come and go; each step mixes prompts and decode tokens.
    # Each sequence's rows must equal decoding it alone by forward() (its
    # prompt, then a token per call): the same f32 sums per row, 1e-5 of
    # the largest output as in the packed test.
    config = transformers.GPT2Config(vocab_size=50, n_embd=32, n_layer=2, n_head=2,
                                     n_positions=64)
    stack = attn.TransformerStack.from_pretrained(save(transformers.GPT2Model(config), tmp_path))
    prompts = [5, 1, 9, 3, 12, 2]
    tokens = [stack.embed(ids(1, n + 4, 50, seed=10 + n))[0] for n in prompts]
    served = [[] for _ in prompts]
    live, done = {}, [0] * len(prompts)  # sequence index -> id
    pending = list(range(len(prompts)))
    while pending or live:
        while pending and len(live) < 3:
            live[pending.pop(0)] = stack.add_sequence()
        order = list(live)
        counts = [prompts[i] if done[i] == 0 else 1 for i in order]
        x = np.concatenate([tokens[i][done[i]:done[i] + n] for i, n in zip(order, counts)])
        y = stack.step([live[i] for i in order], x, counts)
        row = 0
        for i, n in zip(order, counts):
            served[i].append(y[row:row + n])
            row += n
            done[i] += n
            if done[i] == tokens[i].shape[0]:
                stack.remove_sequence(live.pop(i))
    for i, t in enumerate(tokens):
        stack.reset()
        alone = [stack.forward(t[None, :prompts[i]])[0]]
        alone += [stack.forward(t[None, j:j + 1])[0] for j in range(prompts[i], t.shape[0])]
        alone = np.concatenate(alone)
        got = np.concatenate(served[i])
        assert np.abs(got - alone).max() <= 1e-5 * np.abs(alone).max()
    with pytest.raises(ValueError, match="no live sequence 12345"):
        stack.step([12345], tokens[0][:1], [1])
    with pytest.raises(ValueError, match="no live sequence 0"):
        stack.remove_sequence(0)


def test_packed_sequences_equal_each_alone(tmp_path):
    # Packed (no padding): learned positions restart per sequence inside the
    # stack, each sequence attends to its own tokens. f32 sums over the
    # same rows: 1e-5 of the largest output is far above their rounding
    # and far below a position or key from another sequence (O(1)).
    config = transformers.GPT2Config(vocab_size=50, n_embd=32, n_layer=2, n_head=2,
                                     n_positions=16)
    stack = attn.TransformerStack.from_pretrained(save(transformers.GPT2Model(config), tmp_path))
    lengths = [3, 7, 1, 5]
    seqs = [stack.embed(ids(1, n, 50, seed=n))[0] for n in lengths]
    packed = stack.forward_packed(np.concatenate(seqs), lengths)
    alone = []
    for s in seqs:
        stack.reset()
        alone.append(stack.forward(s[None])[0])
    alone = np.concatenate(alone)
    assert np.abs(packed - alone).max() <= 1e-5 * np.abs(alone).max()
    with pytest.raises(ValueError, match="add up to more than the input's 16 tokens"):
        stack.forward_packed(np.concatenate(seqs), [3, 7, 1, 6])
