"""transformers' Llama (LlamaConfig, LlamaForCausalLM, transformers 5.17) and peft's LoRA (LoraConfig,
get_peft_model, peft 0.21), op for op for torchlet.

The modules are registered in the libraries' order (it decides what `.to()` allocates first), the
forward runs their ops in their order, and the Python objects live as long as there: the returned
output keeps the KV cache while use_cache is on, locals die at return. Under PyTorch the parity
program uses the real libraries; under torchlet this file must allocate exactly what they do
(tests/parity/py_zoo_llama_lora.py).

What runs: SDPA attention (PyTorch's enable_gqa for grouped key-value heads, causal, no mask), the
default RoPE, the SiLU MLP, the float32 RMSNorm, DynamicCache, ForCausalLMLoss, gradient
checkpointing (non-reentrant), and LoRA on nn.Linear targets with autocast_adapter_dtype=True
(adapters in float32 over a bfloat16 base). What is not offered raises NotImplementedError naming
it: an attention_mask, position_ids or past_key_values passed in, eager or flash-attention-2
attention, attention dropout, RoPE scaling (rope types other than "default"), tied word embeddings,
activations other than SiLU, LoRA dropout, DoRA and the other LoRA variants, bias training, targets
that are not nn.Linear, and merged or disabled adapters.
"""

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


# ----------------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------------


class LlamaConfig:
    """transformers' LlamaConfig: the model's sizes, with transformers' defaults."""

    model_type = "llama"

    def __init__(self, vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=None, hidden_act="silu",
                 max_position_embeddings=2048, initializer_range=0.02, rms_norm_eps=1e-6, use_cache=True,
                 pad_token_id=None, bos_token_id=1, eos_token_id=2, pretraining_tp=1,
                 tie_word_embeddings=False, rope_theta=10000.0, rope_parameters=None, rope_scaling=None,
                 attention_bias=False, attention_dropout=0.0, mlp_bias=False, head_dim=None,
                 attn_implementation="sdpa", **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_attention_heads if num_key_value_heads is None else num_key_value_heads
        self.hidden_act = hidden_act
        self.max_position_embeddings = max_position_embeddings
        self.initializer_range = initializer_range
        self.rms_norm_eps = rms_norm_eps
        self.use_cache = use_cache
        self.pad_token_id = pad_token_id
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self.pretraining_tp = pretraining_tp
        self.tie_word_embeddings = tie_word_embeddings
        self.attention_bias = attention_bias
        self.attention_dropout = attention_dropout
        self.mlp_bias = mlp_bias
        self.head_dim = head_dim if head_dim is not None else hidden_size // num_attention_heads
        # transformers 5 keeps rope_theta inside rope_parameters; both spellings are accepted.
        if rope_parameters is None:
            rope_parameters = {"rope_type": "default", "rope_theta": rope_theta}
        if rope_scaling is not None or rope_parameters.get("rope_type", "default") != "default":
            raise NotImplementedError("models/llama.py: RoPE scaling (rope_scaling, rope types other than "
                                      "'default') is not offered; use the default RoPE")
        self.rope_parameters = rope_parameters
        self.rope_theta = rope_parameters["rope_theta"]
        if tie_word_embeddings:
            raise NotImplementedError("models/llama.py: tie_word_embeddings=True is not offered")
        if hidden_act != "silu":
            raise NotImplementedError(f"models/llama.py: hidden_act={hidden_act!r} is not offered; use 'silu'")
        if attn_implementation != "sdpa":
            raise NotImplementedError(f"models/llama.py: attn_implementation={attn_implementation!r} is not "
                                      "offered; use 'sdpa'")
        if attention_dropout:
            raise NotImplementedError("models/llama.py: attention_dropout is not offered; use 0.0")
        self._attn_implementation = attn_implementation
        for key, value in kwargs.items():
            setattr(self, key, value)


# ----------------------------------------------------------------------------------------------
# Outputs and the KV cache
# ----------------------------------------------------------------------------------------------


class BaseModelOutputWithPast:
    """transformers' BaseModelOutputWithPast: the last hidden state and the cache."""

    def __init__(self, last_hidden_state=None, past_key_values=None, hidden_states=None, attentions=None):
        self.last_hidden_state = last_hidden_state
        self.past_key_values = past_key_values
        self.hidden_states = hidden_states
        self.attentions = attentions


class CausalLMOutputWithPast:
    """transformers' CausalLMOutputWithPast: loss, logits and the cache, held as long as the output is."""

    def __init__(self, loss=None, logits=None, past_key_values=None, hidden_states=None, attentions=None):
        self.loss = loss
        self.logits = logits
        self.past_key_values = past_key_values
        self.hidden_states = hidden_states
        self.attentions = attentions

    def __getitem__(self, key):
        """Fields by name, as a ModelOutput's dict access gives them."""
        return getattr(self, key)


class DynamicLayer:
    """One layer of transformers' DynamicCache: keys and values grown by torch.cat."""

    def __init__(self):
        self.keys = None
        self.values = None
        self.is_initialized = False

    def lazy_initialization(self, key_states):
        """Empty starts on the states' device and dtype (no allocation: zero elements)."""
        self.dtype, self.device = key_states.dtype, key_states.device
        self.keys = torch.tensor([], dtype=self.dtype, device=self.device)
        self.values = torch.tensor([], dtype=self.dtype, device=self.device)
        self.is_initialized = True

    def update(self, key_states, value_states):
        """Appends the new states (a copy each, as torch.cat makes) and returns the whole."""
        if not self.is_initialized:
            self.lazy_initialization(key_states)
        self.keys = torch.cat([self.keys, key_states], dim=-2)
        self.values = torch.cat([self.values, value_states], dim=-2)
        return self.keys, self.values

    def get_seq_length(self):
        """How many positions are cached."""
        if not self.is_initialized or self.keys.numel() == 0:
            return 0
        return self.keys.shape[-2]


class DynamicCache:
    """transformers' DynamicCache: one DynamicLayer per decoder layer."""

    def __init__(self, config=None):
        n = config.num_hidden_layers if config is not None else 0
        self.layers = [DynamicLayer() for _ in range(n)]

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        """The layer's keys and values with these appended."""
        while len(self.layers) <= layer_idx:
            self.layers.append(DynamicLayer())
        return self.layers[layer_idx].update(key_states, value_states)

    def get_seq_length(self, layer_idx=0):
        """How many positions layer `layer_idx` holds."""
        if layer_idx >= len(self.layers):
            return 0
        return self.layers[layer_idx].get_seq_length()


# ----------------------------------------------------------------------------------------------
# Layers
# ----------------------------------------------------------------------------------------------


class LlamaRMSNorm(nn.Module):
    """transformers' LlamaRMSNorm: computed in float32, the weight applied in the input's dtype."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        """weight * normalised x, with pow/mean/rsqrt in float32 as transformers writes them."""
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def compute_default_rope_parameters(config, device=None):
    """transformers' default RoPE: (inv_freq in float32, attention scaling 1.0)."""
    base = config.rope_parameters["rope_theta"]
    dim = config.head_dim
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
    return inv_freq, 1.0


class LlamaRotaryEmbedding(nn.Module):
    """transformers' LlamaRotaryEmbedding: cos and sin from a float32 matmul, autocast off."""

    def __init__(self, config, device=None):
        super().__init__()
        self.max_seq_len_cached = config.max_position_embeddings
        self.original_max_seq_len = config.max_position_embeddings
        self.config = config
        self.rope_type = "default"
        inv_freq, self.attention_scaling = compute_default_rope_parameters(config, device)
        # Two buffers, so `.to()` converts (allocates) each.
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.register_buffer("original_inv_freq", inv_freq.clone(), persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        """(cos, sin) in x's dtype for the positions; the float32 locals die at return."""
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        device_type = x.device.type if isinstance(x.device.type, str) and x.device.type != "mps" else "cpu"
        with torch.autocast(device_type=device_type, enabled=False):  # Force float32
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * self.attention_scaling
            sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """Rotary position embedding applied to the query and key states."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class SiLUActivation(nn.Module):
    """transformers' ACT2FN["silu"]: F.silu."""

    def forward(self, input):
        """silu(input)."""
        return F.silu(input)


class LlamaMLP(nn.Module):
    """transformers' LlamaMLP: down(silu(gate(x)) * up(x))."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.hidden_size = config.hidden_size
        self.intermediate_size = config.intermediate_size
        self.gate_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=config.mlp_bias)
        self.up_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=config.mlp_bias)
        self.down_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=config.mlp_bias)
        self.act_fn = SiLUActivation()

    def forward(self, x):
        """The gated MLP in one expression, so its temporaries die as transformers' do."""
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return down_proj


def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                           is_causal=None, **kwargs):
    """transformers' sdpa_attention_forward: SDPA with enable_gqa (no repeat_kv copies), causal
    when there is no mask, the output transposed back to (batch, seq, heads, dim)."""
    sdpa_kwargs = {}
    if hasattr(module, "num_key_value_groups"):
        # use_gqa_in_sdpa: PyTorch >= 2.5 on CUDA without a mask takes enable_gqa.
        if attention_mask is not None:
            raise NotImplementedError("models/llama.py: an attention mask is not offered")
        sdpa_kwargs = {"enable_gqa": True}
    is_causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    is_causal = query.shape[2] > 1 and attention_mask is None and is_causal
    attn_output = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, dropout_p=dropout,
                                                 scale=scaling, is_causal=is_causal, **sdpa_kwargs)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, None


class LlamaAttention(nn.Module):
    """transformers' LlamaAttention: q/k/v projections, RoPE, the cache update, SDPA, o_proj."""

    def __init__(self, config, layer_idx):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim = config.head_dim
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = config.attention_dropout
        self.is_causal = True
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim,
                                bias=config.attention_bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim,
                                bias=config.attention_bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim,
                                bias=config.attention_bias)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size,
                                bias=config.attention_bias)

    def forward(self, hidden_states, position_embeddings, attention_mask=None, past_key_values=None,
                cache_position=None, **kwargs):
        """Attention over the sequence; its locals (q, k, v) die at return as transformers' do."""
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)

        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        if past_key_values is not None:
            key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx)

        attn_output, attn_weights = sdpa_attention_forward(
            self, query_states, key_states, value_states, attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling, **kwargs)

        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class GradientCheckpointingLayer(nn.Module):
    """transformers' GradientCheckpointingLayer: when checkpointing in training, the call runs
    under the checkpoint function, with the cache turned off."""

    gradient_checkpointing = False

    def __call__(self, *args, **kwargs):
        """The layer's forward, checkpointed when gradient checkpointing is on and training."""
        if self.gradient_checkpointing and self.training:
            if kwargs.get("use_cache"):
                kwargs["use_cache"] = False
            if kwargs.get("past_key_values") is not None:
                kwargs["past_key_values"] = None
            return self._gradient_checkpointing_func(functools.partial(super().__call__, **kwargs), *args)
        return super().__call__(*args, **kwargs)


class LlamaDecoderLayer(GradientCheckpointingLayer):
    """transformers' LlamaDecoderLayer: pre-norm attention and MLP, each with a residual."""

    def __init__(self, config, layer_idx):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.self_attn = LlamaAttention(config=config, layer_idx=layer_idx)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_values=None,
                use_cache=False, cache_position=None, position_embeddings=None, **kwargs):
        """The layer's output; `residual` keeps its input alive until return, as there."""
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(
            hidden_states=hidden_states, attention_mask=attention_mask, position_ids=position_ids,
            past_key_values=past_key_values, use_cache=use_cache, cache_position=cache_position,
            position_embeddings=position_embeddings, **kwargs)
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


# ----------------------------------------------------------------------------------------------
# The mask: with SDPA and no attention mask there is none, after the packed-sequence check
# ----------------------------------------------------------------------------------------------


def find_packed_sequence_indices(position_ids):
    """transformers' packed-sequence check: None when every row's positions run 0, 1, 2, …"""
    first_dummy_value = position_ids[:, :1] - 1  # We just need the diff on this first value to be 1
    position_diff = torch.diff(position_ids, prepend=first_dummy_value, dim=-1)
    packed_sequence_mask = (position_diff != 1).cumsum(-1)
    if _all_true((packed_sequence_mask[:, -1] == 0).all(), position_ids):
        return None
    raise NotImplementedError("models/llama.py: packed sequences (position_ids restarting within a row) "
                              "are not offered")


def _all_true(flag, position_ids):
    """The truth of a one-element bool tensor; under `torchlet fit` (shapes only) the positions are the
    model's own arange, which never restarts, so the answer is True."""
    if torch._C._holds_int(flag, 1) is None:
        return True
    return bool(flag)


def create_causal_mask(config, inputs_embeds, attention_mask, past_key_values, position_ids):
    """transformers' create_causal_mask for SDPA without a padding mask: the packed-sequence
    check (only without a cache, i.e. in training), then no mask: SDPA runs is_causal."""
    if attention_mask is not None:
        raise NotImplementedError("models/llama.py: attention_mask is not offered; pass none")
    if position_ids is not None and past_key_values is None:
        batch_size = inputs_embeds.shape[0]
        if batch_size != position_ids.shape[0]:
            position_ids = position_ids.expand(batch_size, -1)
        find_packed_sequence_indices(position_ids)
    return None


# ----------------------------------------------------------------------------------------------
# Models
# ----------------------------------------------------------------------------------------------


class LlamaPreTrainedModel(nn.Module):
    """transformers' PreTrainedModel as Llama uses it: weight init and gradient checkpointing."""

    supports_gradient_checkpointing = True

    def post_init(self):
        """transformers' _init_weights, in place (no allocation): normal(0, initializer_range)
        for Linear and Embedding weights, zero biases and padding row, ones for RMSNorm."""
        std = self.config.initializer_range
        with torch.no_grad():
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    module.weight.normal_(mean=0.0, std=std)
                    if module.bias is not None:
                        module.bias.zero_()
                elif isinstance(module, nn.Embedding):
                    module.weight.normal_(mean=0.0, std=std)
                    if module.padding_idx is not None:
                        module.weight[module.padding_idx].zero_()
                elif isinstance(module, LlamaRMSNorm):
                    module.weight.fill_(1.0)

    @property
    def is_gradient_checkpointing(self):
        """Whether any submodule checkpoints."""
        return any(getattr(m, "gradient_checkpointing", False) for m in self.modules())

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        """transformers' gradient_checkpointing_enable: every layer that can runs under
        torch.utils.checkpoint with these kwargs (use_reentrant=True by default, as there)."""
        if gradient_checkpointing_kwargs is None:
            gradient_checkpointing_kwargs = {"use_reentrant": True}
        func = functools.partial(checkpoint, **gradient_checkpointing_kwargs)
        for module in self.modules():
            if hasattr(module, "gradient_checkpointing"):
                module._gradient_checkpointing_func = func
                module.gradient_checkpointing = True

    def gradient_checkpointing_disable(self):
        """Turns gradient checkpointing off again."""
        for module in self.modules():
            if hasattr(module, "gradient_checkpointing"):
                module.gradient_checkpointing = False

    def get_input_embeddings(self):
        """The token embedding."""
        return self.model.embed_tokens if hasattr(self, "model") else self.embed_tokens


class LlamaModel(LlamaPreTrainedModel):
    """transformers' LlamaModel: embedding, decoder layers, final norm; RoPE shared by the layers."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.padding_idx = config.pad_token_id
        self.vocab_size = config.vocab_size
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config=config)
        self.gradient_checkpointing = False
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, use_cache=None, cache_position=None, **kwargs):
        """The last hidden state and the cache; the embedding output lives until return."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("You must specify exactly one of input_ids or inputs_embeds")
        if position_ids is not None or past_key_values is not None or cache_position is not None:
            raise NotImplementedError("models/llama.py: position_ids, past_key_values and cache_position "
                                      "passed in are not offered")
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        if self.gradient_checkpointing and self.training and use_cache:
            use_cache = False  # caching is incompatible with gradient checkpointing

        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)

        if use_cache and past_key_values is None:
            past_key_values = DynamicCache(config=self.config)

        if position_ids is None:
            past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
            position_ids = torch.arange(inputs_embeds.shape[1], device=inputs_embeds.device) + past_seen_tokens
            position_ids = position_ids.unsqueeze(0)

        causal_mask = create_causal_mask(config=self.config, inputs_embeds=inputs_embeds,
                                         attention_mask=attention_mask, past_key_values=past_key_values,
                                         position_ids=position_ids)

        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids=position_ids)

        for decoder_layer in self.layers[: self.config.num_hidden_layers]:
            hidden_states = decoder_layer(
                hidden_states, attention_mask=causal_mask, position_embeddings=position_embeddings,
                position_ids=position_ids, past_key_values=past_key_values, use_cache=use_cache, **kwargs)

        hidden_states = self.norm(hidden_states)
        return BaseModelOutputWithPast(last_hidden_state=hidden_states, past_key_values=past_key_values)


def fixed_cross_entropy(source, target, num_items_in_batch=None, ignore_index=-100, **kwargs):
    """transformers' fixed_cross_entropy: mean cross entropy over the non-ignored labels."""
    if num_items_in_batch is not None:
        raise NotImplementedError("models/llama.py: num_items_in_batch is not offered")
    loss = F.cross_entropy(source, target, ignore_index=ignore_index, reduction="mean")
    return loss


def ForCausalLMLoss(logits, labels, vocab_size, num_items_in_batch=None, ignore_index=-100, shift_labels=None,
                    **kwargs):
    """transformers' ForCausalLMLoss: float logits, labels padded by one and shifted, cross entropy."""
    # Upcast to float if we need to compute the loss to avoid potential precision issues
    logits = logits.float()
    if shift_labels is None:
        # Shift so that tokens < n predict n
        labels = F.pad(labels, (0, 1), value=ignore_index)
        shift_labels = labels[..., 1:].contiguous()

    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    shift_labels = shift_labels.to(logits.device)
    loss = fixed_cross_entropy(logits, shift_labels, num_items_in_batch, ignore_index, **kwargs)
    return loss


class LlamaForCausalLM(LlamaPreTrainedModel):
    """transformers' LlamaForCausalLM: LlamaModel and the LM head, with the causal LM loss."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def loss_function(self, logits, labels, vocab_size, **kwargs):
        """transformers' loss for causal LMs."""
        return ForCausalLMLoss(logits, labels, vocab_size, **kwargs)

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, labels=None, use_cache=None, cache_position=None, logits_to_keep=0,
                **kwargs):
        """CausalLMOutputWithPast: the loss when labels are given, the logits in the model's dtype,
        and the cache; the final hidden state dies at return."""
        outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             past_key_values=past_key_values, inputs_embeds=inputs_embeds, use_cache=use_cache,
                             cache_position=cache_position, **kwargs)

        hidden_states = outputs.last_hidden_state
        # Only compute necessary logits, and do not upcast them to float if we are not computing the loss
        slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        logits = self.lm_head(hidden_states[:, slice_indices, :])

        loss = None
        if labels is not None:
            loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size, **kwargs)

        return CausalLMOutputWithPast(loss=loss, logits=logits, past_key_values=outputs.past_key_values,
                                      hidden_states=outputs.hidden_states, attentions=outputs.attentions)


# ----------------------------------------------------------------------------------------------
# peft's LoRA
# ----------------------------------------------------------------------------------------------


class LoraConfig:
    """peft's LoraConfig: rank, alpha, dropout and the target module names (peft's defaults)."""

    def __init__(self, r=8, lora_alpha=8, lora_dropout=0.0, target_modules=None, bias="none",
                 use_rslora=False, use_dora=False, fan_in_fan_out=False, init_lora_weights=True,
                 modules_to_save=None, task_type=None, **kwargs):
        if target_modules is None:
            raise NotImplementedError("models/llama.py: LoraConfig needs target_modules (peft's per-model "
                                      "defaults are not offered)")
        if lora_dropout:
            raise NotImplementedError("models/llama.py: lora_dropout is not offered; use 0.0")
        if bias != "none":
            raise NotImplementedError(f"models/llama.py: LoRA bias={bias!r} is not offered; use 'none'")
        if use_dora:
            raise NotImplementedError("models/llama.py: DoRA (use_dora=True) is not offered")
        if fan_in_fan_out:
            raise NotImplementedError("models/llama.py: fan_in_fan_out=True is not offered")
        if modules_to_save:
            raise NotImplementedError("models/llama.py: modules_to_save is not offered")
        if init_lora_weights is not True:
            raise NotImplementedError("models/llama.py: init_lora_weights other than True is not offered")
        for key in kwargs:
            raise NotImplementedError(f"models/llama.py: LoraConfig({key}=...) is not offered")
        self.r = r
        self.lora_alpha = lora_alpha
        self.lora_dropout = lora_dropout
        self.target_modules = [target_modules] if isinstance(target_modules, str) else list(target_modules)
        self.bias = bias
        self.use_rslora = use_rslora
        self.task_type = task_type


class LoraLinear(nn.Module):
    """peft's lora.Linear: the frozen base layer plus B(A(x)) * scaling, the adapters in their own
    dtype (float32 here) with the input cast to it and the sum cast back."""

    def __init__(self, base_layer, adapter_name, r, lora_alpha, use_rslora=False):
        super().__init__()
        # peft's LoraLayer.__init__ registration order: base_layer, lora_dropout, lora_A, lora_B.
        self.base_layer = base_layer
        self.r = {}
        self.lora_alpha = {}
        self.scaling = {}
        self.lora_dropout = nn.ModuleDict({})
        self.lora_A = nn.ModuleDict({})
        self.lora_B = nn.ModuleDict({})
        self.in_features = base_layer.in_features
        self.out_features = base_layer.out_features
        self.active_adapters = [adapter_name]
        self.update_layer(adapter_name, r, lora_alpha, use_rslora)

    def update_layer(self, adapter_name, r, lora_alpha, use_rslora):
        """peft's update_layer: A and B made on the host in the default dtype, initialised (A
        kaiming-uniform, B zeros), then moved to the base weight's device and dtype."""
        self.r[adapter_name] = r
        self.lora_alpha[adapter_name] = lora_alpha
        self.lora_dropout[adapter_name] = nn.Identity()
        self.lora_A[adapter_name] = nn.Linear(self.in_features, r, bias=False)
        self.lora_B[adapter_name] = nn.Linear(r, self.out_features, bias=False)
        self.scaling[adapter_name] = lora_alpha / math.sqrt(r) if use_rslora else lora_alpha / r
        nn.init.kaiming_uniform_(self.lora_A[adapter_name].weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B[adapter_name].weight)
        self._move_adapter_to_device_of_base_layer(adapter_name)

    def _move_adapter_to_device_of_base_layer(self, adapter_name):
        """A, then B, to the base weight's device and (floating) dtype: one new tensor each."""
        weight = self.base_layer.weight
        for layer in (self.lora_A, self.lora_B):
            layer[adapter_name] = layer[adapter_name].to(weight.device, dtype=weight.dtype)

    def _cast_input_dtype(self, x, dtype):
        """x in the adapter's dtype (a copy when it differs)."""
        if x.dtype == dtype:
            return x
        return x.to(dtype=dtype)

    def forward(self, x, *args, **kwargs):
        """base(x) + B(A(x)) * scaling in the adapters' dtype, cast back to the base's dtype."""
        result = self.base_layer(x, *args, **kwargs)
        torch_result_dtype = result.dtype

        lora_A_keys = self.lora_A.keys()
        for active_adapter in self.active_adapters:
            if active_adapter not in lora_A_keys:
                continue
            lora_A = self.lora_A[active_adapter]
            lora_B = self.lora_B[active_adapter]
            dropout = self.lora_dropout[active_adapter]
            scaling = self.scaling[active_adapter]
            x = self._cast_input_dtype(x, lora_A.weight.dtype)
            result = result + lora_B(lora_A(dropout(x))) * scaling

        result = result.to(torch_result_dtype)
        return result


def _cast_adapter_dtype(model, adapter_name):
    """peft's cast_adapter_dtype with autocast_adapter_dtype=True: float16/bfloat16 adapter weights
    become float32 through `param.data = param.data.to(torch.float32)` (the old one freed)."""
    for module in model.modules():
        if not isinstance(module, LoraLinear):
            continue
        for submodule in module.modules():
            if not isinstance(submodule, nn.ModuleDict) or adapter_name not in submodule.keys():
                continue
            for param in submodule[adapter_name].parameters():
                if param.dtype in (torch.float16, torch.bfloat16):
                    param.data = param.data.to(torch.float32)


class LoraModel(nn.Module):
    """peft's LoraModel: the model with its target Linear layers replaced by LoraLinear, everything
    but the adapters frozen."""

    prefix = "lora_"

    def __init__(self, model, config, adapter_name="default"):
        super().__init__()
        self.model = model
        self.peft_config = {adapter_name: config}
        self.active_adapter = adapter_name
        self.inject_adapter(model, config, adapter_name)

    def inject_adapter(self, model, config, adapter_name):
        """Replaces each module whose name ends in a target, in named_modules order, then freezes
        everything that is not an adapter."""
        targets = [name for name, _ in model.named_modules()
                   if any(name == t or name.endswith("." + t) for t in config.target_modules)]
        if not targets:
            raise ValueError(f"Target modules {config.target_modules} not found in the base model")
        for name in targets:
            parent_name, _, child_name = name.rpartition(".")
            parent = model.get_submodule(parent_name)
            target = getattr(parent, child_name)
            if not isinstance(target, nn.Linear):
                raise NotImplementedError(f"models/llama.py: LoRA on {type(target).__name__} ({name}) is not "
                                          "offered; only nn.Linear targets")
            setattr(parent, child_name, LoraLinear(target, adapter_name, config.r, config.lora_alpha,
                                                   config.use_rslora))
        for n, p in model.named_parameters():
            if self.prefix not in n:
                p.requires_grad = False

    def _cast_adapter_dtype(self, adapter_name, autocast_adapter_dtype=True):
        """The adapters in float32 when autocast_adapter_dtype is on."""
        if autocast_adapter_dtype:
            _cast_adapter_dtype(self.model, adapter_name)

    def forward(self, *args, **kwargs):
        """The wrapped model's forward."""
        return self.model.forward(*args, **kwargs)

    def __getattr__(self, name):
        """Anything else from the wrapped model (gradient_checkpointing_enable, config, …)."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "model":
                raise
            return getattr(self.model, name)


class PeftModelForCausalLM(nn.Module):
    """peft's PeftModelForCausalLM: the LoraModel, its forward and the base model's methods."""

    def __init__(self, model, peft_config, adapter_name="default", autocast_adapter_dtype=True):
        super().__init__()
        self.active_adapter = adapter_name
        self.base_model = LoraModel(model, peft_config, adapter_name)
        self.base_model._cast_adapter_dtype(adapter_name=adapter_name, autocast_adapter_dtype=autocast_adapter_dtype)
        if getattr(model, "is_gradient_checkpointing", True):
            # peft would make the embedding output require grad here; not offered.
            raise NotImplementedError("models/llama.py: get_peft_model on a model already checkpointing "
                                      "is not offered; call gradient_checkpointing_enable afterwards")

    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None, labels=None, output_attentions=None,
                output_hidden_states=None, return_dict=None, **kwargs):
        """The base model's forward with the labels."""
        return self.base_model(input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds,
                               labels=labels, **kwargs)

    def get_base_model(self):
        """The model under the adapters."""
        return self.base_model.model

    def __getattr__(self, name):
        """Anything else from the LoraModel (and so from the model)."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "base_model":
                raise
            return getattr(self.base_model, name)


def get_peft_model(model, peft_config, adapter_name="default", autocast_adapter_dtype=True):
    """peft's get_peft_model for a causal LM with a LoraConfig."""
    if peft_config.task_type not in (None, "CAUSAL_LM"):
        raise NotImplementedError(f"models/llama.py: task_type={peft_config.task_type!r} is not offered")
    return PeftModelForCausalLM(model, peft_config, adapter_name, autocast_adapter_dtype=autocast_adapter_dtype)
