"""transformers' GPT-2 language model (transformers.models.gpt2.modeling_gpt2, 5.17), op for op, for torchlet.

`GPT2Config` and `GPT2LMHeadModel` register their parameters in transformers' order and run transformers'
forward (Conv1D's addmm, NewGELU written out, the DynamicCache's torch.cat copies of keys and values, SDPA
attention with its dropout, ForCausalLMLoss's pad, shift and cross_entropy) and keep what transformers keeps
(the output holds the cache), so the model allocates what transformers' does under PyTorch:
tests/parity/py_zoo_gpt2.py runs transformers' under PyTorch and this under torchlet and compares every
allocator event. `gradient_checkpointing_enable()` runs each block under torch.utils.checkpoint as
transformers' GradientCheckpointingLayer does.

Not offered, each refused by name: attention implementations other than "sdpa" (transformers' default),
cross-attention (add_cross_attention, encoder_hidden_states), an attention_mask, continuing from a given
past_key_values, output_attentions / output_hidden_states, a pad_token_id (transformers' padding check),
logits_to_keep as a tensor, activations outside ACTIVATIONS, and pretrained weights. reorder_and_upcast_attn
is accepted and, as in transformers under SDPA, changes nothing.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

__all__ = ["GPT2Config", "GPT2Model", "GPT2LMHeadModel", "DynamicCache"]


class GPT2Config:
    """GPT-2's hyperparameters with transformers' defaults (GPT-2 small) and its attribute aliases."""

    model_type = "gpt2"
    # transformers' attribute_map: the generic names read the GPT-2 ones.
    attribute_map = {
        "hidden_size": "n_embd",
        "max_position_embeddings": "n_positions",
        "num_attention_heads": "n_head",
        "num_hidden_layers": "n_layer",
    }

    def __init__(self, vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12, n_inner=None,
                 activation_function="gelu_new", resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1,
                 layer_norm_epsilon=1e-5, initializer_range=0.02, summary_type="cls_index", summary_use_proj=True,
                 summary_activation=None, summary_proj_to_labels=True, summary_first_dropout=0.1,
                 scale_attn_weights=True, use_cache=True, bos_token_id=50256, eos_token_id=50256,
                 pad_token_id=None, scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False,
                 add_cross_attention=False, tie_word_embeddings=True, attn_implementation=None,
                 use_return_dict=True, **kwargs):
        if add_cross_attention:
            raise NotImplementedError("torchlet's GPT-2: add_cross_attention=True is not offered")
        if attn_implementation not in (None, "sdpa"):
            raise NotImplementedError(
                f"torchlet's GPT-2: attn_implementation={attn_implementation!r} is not offered; "
                "only 'sdpa' (transformers' default)")
        if activation_function not in ACTIVATIONS:
            raise NotImplementedError(
                f"torchlet's GPT-2: activation_function={activation_function!r} is not offered; "
                f"use one of {sorted(ACTIVATIONS)}")
        self.vocab_size = vocab_size
        self.n_positions = n_positions
        self.n_embd = n_embd
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_inner = n_inner
        self.activation_function = activation_function
        self.resid_pdrop = resid_pdrop
        self.embd_pdrop = embd_pdrop
        self.attn_pdrop = attn_pdrop
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.summary_type = summary_type
        self.summary_use_proj = summary_use_proj
        self.summary_activation = summary_activation
        self.summary_proj_to_labels = summary_proj_to_labels
        self.summary_first_dropout = summary_first_dropout
        self.scale_attn_weights = scale_attn_weights
        self.use_cache = use_cache
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self.pad_token_id = pad_token_id
        self.scale_attn_by_inverse_layer_idx = scale_attn_by_inverse_layer_idx
        # transformers reads it only under eager attention, so with SDPA it changes nothing there either.
        self.reorder_and_upcast_attn = reorder_and_upcast_attn
        self.add_cross_attention = add_cross_attention
        self.tie_word_embeddings = tie_word_embeddings
        self._attn_implementation = "sdpa"
        self.use_return_dict = use_return_dict
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __getattr__(self, name):
        """The attribute_map aliases (hidden_size → n_embd, …)."""
        mapped = type(self).attribute_map.get(name)
        if mapped is None:
            raise AttributeError(f"'GPT2Config' object has no attribute {name!r}")
        return getattr(self, mapped)

    def __repr__(self):
        return "GPT2Config(" + ", ".join(f"{k}={v!r}" for k, v in vars(self).items()) + ")"


class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: a linear layer with a transposed (nx, nf) weight, run as addmm."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.nx = nx
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def __repr__(self):
        return f"Conv1D(nf={self.nf}, nx={self.nx})"

    def forward(self, x):
        """bias + x @ weight over the flattened leading dims, viewed back."""
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class NewGELUActivation(nn.Module):
    """transformers' gelu_new: the tanh GELU written out, one elementwise op (and allocation) at a time."""

    def forward(self, input):
        """0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), evaluated in transformers' order."""
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class GELUActivation(nn.Module):
    """transformers' "gelu": the exact GELU as one F.gelu."""

    def forward(self, input):
        """F.gelu(input)."""
        return F.gelu(input)


class GELUTanh(nn.Module):
    """transformers' "gelu_pytorch_tanh": F.gelu with the tanh approximation."""

    def forward(self, input):
        """F.gelu(input, approximate="tanh")."""
        return F.gelu(input, approximate="tanh")


# transformers' ACT2FN entries that GPT-2 configs use; the others are refused by GPT2Config.
ACTIVATIONS = {
    "gelu_new": NewGELUActivation,
    "gelu": GELUActivation,
    "gelu_pytorch_tanh": GELUTanh,
    "relu": nn.ReLU,
    "silu": nn.SiLU,
    "swish": nn.SiLU,
    "tanh": nn.Tanh,
}


class DynamicLayer:
    """One layer's keys and values of transformers' DynamicCache, grown by torch.cat (a copy each update)."""

    def __init__(self):
        # transformers sets these three first: their order decides the order the tensors are freed in.
        self.keys = None
        self.values = None
        self.is_initialized = False

    def lazy_initialization(self, key_states, value_states):
        """Empty 1-D starts (no allocation), which torch.cat skips beside the first states."""
        self.dtype, self.device = key_states.dtype, key_states.device
        self.keys = torch.tensor([], dtype=self.dtype, device=self.device)
        self.values = torch.tensor([], dtype=self.dtype, device=self.device)
        self.is_initialized = True

    def update(self, key_states, value_states):
        """Append the new states along the sequence dim; returns the whole keys and values."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        self.keys = torch.cat([self.keys, key_states], dim=-2)
        self.values = torch.cat([self.values, value_states], dim=-2)
        return self.keys, self.values

    def get_seq_length(self):
        """How many positions are cached."""
        if not self.is_initialized or self.keys.numel() == 0:
            return 0
        return self.keys.shape[-2]


class DynamicCache:
    """transformers' DynamicCache built from a config: one DynamicLayer per block, made up front."""

    def __init__(self, config=None):
        n = config.num_hidden_layers if config is not None else 0
        self.layers = [DynamicLayer() for _ in range(n)]

    def update(self, key_states, value_states, layer_idx):
        """Cache.update: the layer's DynamicLayer.update (layers appended on demand without a config)."""
        while len(self.layers) <= layer_idx:
            self.layers.append(DynamicLayer())
        keys, values = self.layers[layer_idx].update(key_states, value_states)
        return keys, values

    def get_seq_length(self, layer_idx=0):
        """Cached positions of a layer (0 before the first update)."""
        if layer_idx >= len(self.layers):
            return 0
        return self.layers[layer_idx].get_seq_length()

    def __len__(self):
        return len(self.layers)


class ModelOutput:
    """transformers' ModelOutput reduced to what is used here: fields as attributes and items, in order."""

    _fields = ()

    def __init__(self, **kwargs):
        # Set in field order: the fields are released in this order when the output dies.
        for name in self._fields:
            setattr(self, name, kwargs.pop(name, None))
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected fields {sorted(kwargs)}")

    def __getitem__(self, key):
        """out["loss"] by name, out[0] by position among the fields that are set."""
        if isinstance(key, str):
            return getattr(self, key)
        return self.to_tuple()[key]

    def keys(self):
        """The names of the fields that are set."""
        return [n for n in self._fields if getattr(self, n) is not None]

    def to_tuple(self):
        """The fields that are set, in order (what return_dict=False returns)."""
        return tuple(getattr(self, n) for n in self.keys())


class BaseModelOutputWithPastAndCrossAttentions(ModelOutput):
    """GPT2Model's output."""

    _fields = ("last_hidden_state", "past_key_values", "hidden_states", "attentions", "cross_attentions")


class CausalLMOutputWithCrossAttentions(ModelOutput):
    """GPT2LMHeadModel's output: it keeps the cache (past_key_values) alive as long as it lives."""

    _fields = ("loss", "logits", "past_key_values", "hidden_states", "attentions", "cross_attentions")


def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                           is_causal=None, **kwargs):
    """transformers.integrations.sdpa_attention.sdpa_attention_forward for GPT-2 (no GQA, no position bias)."""
    q_length = query.shape[2]
    kv_length = key.shape[2]
    is_causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    is_causal = q_length > 1 and attention_mask is None and is_causal
    # Flash and cuDNN need q_length == kv_length under is_causal; transformers crops the keys to match.
    if is_causal and attention_mask is None and q_length > 1 and kv_length > q_length:
        key = key[:, :, :q_length, :]
        value = value[:, :, :q_length, :]
    attn_output = F.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling, is_causal=is_causal)
    # (batch, heads, seq, dim) → (batch, seq, heads, dim): a copy unless the backend laid it out so.
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, None


class GPT2Attention(nn.Module):
    """Causal self-attention: c_attn (q, k, v in one Conv1D), the cache update, SDPA, c_proj, dropout."""

    def __init__(self, config, is_cross_attention=False, layer_idx=None):
        super().__init__()
        if is_cross_attention:
            raise NotImplementedError("torchlet's GPT-2: cross-attention is not offered")
        self.config = config
        self.embed_dim = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(
                f"`embed_dim` must be divisible by num_heads (got `embed_dim`: {self.embed_dim} and `num_heads`:"
                f" {self.num_heads}).")
        self.scale_attn_weights = config.scale_attn_weights
        self.scale_attn_by_inverse_layer_idx = config.scale_attn_by_inverse_layer_idx
        self.reorder_and_upcast_attn = config.reorder_and_upcast_attn
        self.is_cross_attention = is_cross_attention
        self.layer_idx = layer_idx
        # One scale for SDPA: 1/√head_dim, further divided by layer_idx + 1 if asked.
        self.scaling = 1.0
        if self.scale_attn_weights:
            self.scaling = self.head_dim ** -0.5
        if self.scale_attn_by_inverse_layer_idx:
            self.scaling /= float(self.layer_idx + 1)
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        self.is_causal = True

    def forward(self, hidden_states, past_key_values=None, attention_mask=None, encoder_hidden_states=None,
                encoder_attention_mask=None, output_attentions=False, **kwargs):
        """(attn_output, None): heads split as views, the cache's copies, SDPA with dropout in training."""
        if encoder_hidden_states is not None:
            raise NotImplementedError("torchlet's GPT-2: encoder_hidden_states (cross-attention) is not offered")
        query_states, key_states, value_states = self.c_attn(hidden_states).split(self.split_size, dim=2)
        shape_kv = (*key_states.shape[:-1], -1, self.head_dim)
        key_states = key_states.view(shape_kv).transpose(1, 2)
        value_states = value_states.view(shape_kv).transpose(1, 2)

        shape_q = (*query_states.shape[:-1], -1, self.head_dim)
        query_states = query_states.view(shape_q).transpose(1, 2)

        if past_key_values is not None:
            key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx)

        attn_output, attn_weights = sdpa_attention_forward(
            self, query_states, key_states, value_states, attention_mask,
            dropout=self.attn_dropout.p if self.training else 0.0, scaling=self.scaling, **kwargs)

        attn_output = attn_output.reshape(*attn_output.shape[:-2], -1).contiguous()
        attn_output = self.c_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)
        return attn_output, attn_weights


class GPT2MLP(nn.Module):
    """Feed-forward: c_fc, the activation, c_proj, dropout."""

    def __init__(self, intermediate_size, config):
        super().__init__()
        embed_dim = config.hidden_size
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = ACTIVATIONS[config.activation_function]()
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        """dropout(c_proj(act(c_fc(x))))."""
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class GradientCheckpointingLayer(nn.Module):
    """transformers' GradientCheckpointingLayer: under gradient checkpointing in training, the call is checkpointed."""

    gradient_checkpointing = False

    def __call__(self, *args, **kwargs):
        """Call forward, through _gradient_checkpointing_func (without cache) when checkpointing."""
        if self.gradient_checkpointing and self.training:
            # The replay in backward would update the cache a second time, so it is dropped.
            if "use_cache" in kwargs and kwargs["use_cache"]:
                kwargs["use_cache"] = False
            if "past_key_values" in kwargs and kwargs["past_key_values"] is not None:
                kwargs["past_key_values"] = None
            function = self.forward
            return self._gradient_checkpointing_func(lambda *a: function(*a, **kwargs), *args)
        return super().__call__(*args, **kwargs)


class GPT2Block(GradientCheckpointingLayer):
    """Pre-norm transformer block: x + attn(ln_1(x)), then + mlp(ln_2(·))."""

    def __init__(self, config, layer_idx=None):
        super().__init__()
        hidden_size = config.hidden_size
        inner_dim = config.n_inner if config.n_inner is not None else 4 * hidden_size
        self.ln_1 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config=config, layer_idx=layer_idx)
        self.ln_2 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(inner_dim, config)

    def forward(self, hidden_states, past_key_values=None, attention_mask=None, encoder_hidden_states=None,
                encoder_attention_mask=None, use_cache=False, **kwargs):
        """The block's output; its locals (attn_output, feed_forward_hidden_states) die at return, in this order."""
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_output, _ = self.attn(
            hidden_states,
            past_key_values=past_key_values,
            attention_mask=attention_mask,
            use_cache=use_cache,
            **kwargs,
        )
        # residual connection
        hidden_states = attn_output + residual

        if encoder_hidden_states is not None:
            raise NotImplementedError("torchlet's GPT-2: encoder_hidden_states (cross-attention) is not offered")

        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        # residual connection
        hidden_states = residual + feed_forward_hidden_states
        return hidden_states


class GPT2PreTrainedModel(nn.Module):
    """What GPT-2 takes from transformers' PreTrainedModel: weight init, tying, gradient checkpointing."""

    base_model_prefix = "transformer"
    supports_gradient_checkpointing = True
    main_input_name = "input_ids"

    def __init__(self, config):
        super().__init__()
        self.config = config

    def _init_weights(self, module):
        """PreTrainedModel._init_weights then GPT-2's: normal(0, 0.02) weights, zero biases, unit norms,
        and the residual projections scaled by 1/√(2·n_layer)."""
        std = self.config.initializer_range
        with torch.no_grad():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=std)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            if isinstance(module, Conv1D):
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            if isinstance(module, (GPT2Attention, GPT2MLP)):
                nn.init.normal_(module.c_proj.weight, mean=0.0, std=std / math.sqrt(2 * self.config.n_layer))

    def post_init(self):
        """Initialize the weights (once per tree: the outermost model's call does it) and tie the embeddings."""
        if not getattr(self, "_weights_initialized", False):
            self.apply(self._init_weights)
            for module in self.modules():
                object.__setattr__(module, "_weights_initialized", True)
        self.tie_weights()

    def tie_weights(self):
        """lm_head.weight becomes transformer.wte.weight, one Parameter (parameters() lists it once)."""
        if self.config.tie_word_embeddings and hasattr(self, "lm_head"):
            self.lm_head.weight = self.transformer.wte.weight

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None, every_n_layers=1, offload=False):
        """Checkpoint every every_n_layers-th block with torch.utils.checkpoint (use_reentrant=False by default)."""
        if offload:
            raise NotImplementedError("torchlet's GPT-2: gradient_checkpointing_enable(offload=True) is not offered")
        if gradient_checkpointing_kwargs is None:
            gradient_checkpointing_kwargs = {"use_reentrant": False}
        kwargs = dict(gradient_checkpointing_kwargs)

        def gradient_checkpointing_func(function, *args):
            return checkpoint(function, *args, **kwargs)

        layer_index = 0
        for module in self.modules():
            if hasattr(module, "gradient_checkpointing"):
                object.__setattr__(module, "_gradient_checkpointing_func", gradient_checkpointing_func)
                if isinstance(module, GradientCheckpointingLayer):
                    object.__setattr__(module, "gradient_checkpointing", layer_index % every_n_layers == 0)
                    layer_index += 1
                else:
                    object.__setattr__(module, "gradient_checkpointing", True)
        # transformers then hooks the input embeddings to set requires_grad on their output; with the
        # embeddings trained (as here) their output requires grad already, so the hook changes nothing.

    def gradient_checkpointing_disable(self):
        """Run every block without checkpointing again."""
        for module in self.modules():
            if hasattr(module, "gradient_checkpointing"):
                object.__setattr__(module, "gradient_checkpointing", False)

    @property
    def is_gradient_checkpointing(self):
        """Whether any module checkpoints."""
        return any(getattr(m, "gradient_checkpointing", False) for m in self.modules())


class GPT2Model(GPT2PreTrainedModel):
    """The transformer: token and position embeddings, dropout, the blocks, the final LayerNorm."""

    def __init__(self, config):
        super().__init__(config)
        self.embed_dim = config.hidden_size
        self.wte = nn.Embedding(config.vocab_size, self.embed_dim)
        self.wpe = nn.Embedding(config.max_position_embeddings, self.embed_dim)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(config, layer_idx=i) for i in range(config.num_hidden_layers)])
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=config.layer_norm_epsilon)
        self.gradient_checkpointing = False
        self._attn_implementation = config._attn_implementation
        self.post_init()

    def get_input_embeddings(self):
        """The token embedding."""
        return self.wte

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, token_type_ids=None,
                position_ids=None, inputs_embeds=None, encoder_hidden_states=None, encoder_attention_mask=None,
                use_cache=None, output_attentions=None, output_hidden_states=None, return_dict=None, **kwargs):
        """Hidden states after ln_f, and the cache; inputs_embeds and position_embeds die at return, in this order."""
        if output_attentions or output_hidden_states:
            raise NotImplementedError(
                "torchlet's GPT-2: output_attentions / output_hidden_states are not offered")
        if attention_mask is not None:
            raise NotImplementedError(
                "torchlet's GPT-2: an attention_mask is not offered (transformers' mask building is not mirrored)")
        if past_key_values is not None:
            raise NotImplementedError(
                "torchlet's GPT-2: continuing from a given past_key_values is not offered")
        if encoder_hidden_states is not None:
            raise NotImplementedError("torchlet's GPT-2: encoder_hidden_states (cross-attention) is not offered")
        # merge_with_config_defaults: use_cache from the config, off under checkpointing in training.
        if use_cache is None:
            use_cache = self.config.use_cache
        if use_cache and self.gradient_checkpointing and self.training:
            use_cache = False

        if input_ids is not None and inputs_embeds is not None:
            raise ValueError("You cannot specify both input_ids and inputs_embeds at the same time")
        elif input_ids is not None:
            # warn_if_padding_and_no_attention_mask looks at input_ids only with a pad_token_id.
            if self.config.pad_token_id is not None:
                raise NotImplementedError(
                    "torchlet's GPT-2: a pad_token_id without an attention_mask is not offered "
                    "(transformers' padding check indexes input_ids)")
            input_shape = input_ids.size()
            input_ids = input_ids.view(-1, input_shape[-1])
            batch_size = input_ids.shape[0]
        elif inputs_embeds is not None:
            input_shape = inputs_embeds.size()[:-1]
            batch_size = inputs_embeds.shape[0]
        else:
            raise ValueError("You have to specify either input_ids or inputs_embeds")

        if token_type_ids is not None:
            token_type_ids = token_type_ids.view(-1, input_shape[-1])

        if use_cache:
            if past_key_values is None:
                past_key_values = DynamicCache(config=self.config)

        if inputs_embeds is None:
            inputs_embeds = self.wte(input_ids)

        if position_ids is None:
            past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
            # arange then + past_seen_tokens: two allocations, the first freed at once.
            position_ids = torch.arange(inputs_embeds.shape[1], device=inputs_embeds.device) + past_seen_tokens
            position_ids = position_ids.unsqueeze(0)

        position_embeds = self.wpe(position_ids)
        hidden_states = inputs_embeds + position_embeds.to(inputs_embeds.device)

        # create_causal_mask: with SDPA, no padding and no past it is None and SDPA runs is_causal.
        causal_mask = None

        if token_type_ids is not None:
            token_type_embeds = self.wte(token_type_ids)
            hidden_states = hidden_states + token_type_embeds

        hidden_states = self.drop(hidden_states)

        output_shape = (-1,) + tuple(input_shape[1:]) + (hidden_states.size(-1),)

        for i, block in enumerate(self.h):
            hidden_states = block(
                hidden_states,
                past_key_values if not (self.gradient_checkpointing and self.training) else None,
                causal_mask,
                encoder_hidden_states,  # as a positional argument for gradient checkpointing
                encoder_attention_mask=encoder_attention_mask,
                use_cache=use_cache,
                position_ids=position_ids,
                **kwargs,
            )

        hidden_states = self.ln_f(hidden_states)

        hidden_states = hidden_states.view(output_shape)

        past_key_values = past_key_values if use_cache else None
        return BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=hidden_states,
            past_key_values=past_key_values,
        )


def fixed_cross_entropy(source, target, num_items_in_batch=None, ignore_index=-100, **kwargs):
    """transformers' fixed_cross_entropy: mean, or sum over num_items_in_batch when given."""
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = F.cross_entropy(source, target, ignore_index=ignore_index, reduction=reduction)
    if reduction == "sum":
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.to(loss.device)
        loss = loss / num_items_in_batch
    return loss


def ForCausalLMLoss(logits, labels, vocab_size, num_items_in_batch=None, ignore_index=-100, shift_labels=None,
                    **kwargs):
    """transformers' causal-LM loss: labels padded by one ignore_index and shifted left, then cross_entropy."""
    # Upcast to float if we need to compute the loss to avoid potential precision issues
    logits = logits.float()

    if shift_labels is None:
        # Shift so that tokens < n predict n
        labels = F.pad(labels, (0, 1), value=ignore_index)
        shift_labels = labels[..., 1:].contiguous()

    # Flatten the tokens
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    shift_labels = shift_labels.to(logits.device)
    loss = fixed_cross_entropy(logits, shift_labels, num_items_in_batch, ignore_index, **kwargs)
    return loss


class GPT2LMHeadModel(GPT2PreTrainedModel):
    """GPT-2 with its language-model head (tied to the token embedding) and its loss."""

    def __init__(self, config):
        super().__init__(config)
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        """The token embedding."""
        return self.transformer.wte

    @property
    def loss_function(self):
        """ForCausalLMLoss, as transformers maps GPT2LMHeadModel's loss_type."""
        return ForCausalLMLoss

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, token_type_ids=None,
                position_ids=None, inputs_embeds=None, encoder_hidden_states=None, encoder_attention_mask=None,
                labels=None, use_cache=None, logits_to_keep=0, return_dict=None, **kwargs):
        """CausalLMOutputWithCrossAttentions(loss, logits, past_key_values), or its tuple with return_dict=False."""
        transformer_outputs = self.transformer(
            input_ids,
            past_key_values=past_key_values,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            encoder_hidden_states=encoder_hidden_states,
            encoder_attention_mask=encoder_attention_mask,
            use_cache=use_cache,
            **kwargs,
        )
        hidden_states = transformer_outputs.last_hidden_state

        if not isinstance(logits_to_keep, int):
            raise NotImplementedError("torchlet's GPT-2: logits_to_keep as a tensor of indices is not offered")
        # 0 keeps every position: slice(0, None) is a view.
        slice_indices = slice(-logits_to_keep, None)
        logits = self.lm_head(hidden_states[:, slice_indices, :])

        loss = None
        if labels is not None:
            loss = self.loss_function(
                logits,
                labels,
                vocab_size=self.config.vocab_size,
                **kwargs,
            )

        output = CausalLMOutputWithCrossAttentions(
            loss=loss,
            logits=logits,
            past_key_values=transformer_outputs.past_key_values,
            hidden_states=transformer_outputs.hidden_states,
            attentions=transformer_outputs.attentions,
            cross_attentions=transformer_outputs.cross_attentions,
        )
        # can_return_tuple: return_dict=False (or the config's use_return_dict off) gives the tuple.
        if return_dict is False or (return_dict is None and not self.config.use_return_dict):
            return output.to_tuple()
        return output
