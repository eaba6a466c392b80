"""A tiny chat model the tests build themselves (no weights are downloaded or shipped): a two-layer
LlamaForCausalLM (or, to stand for an architecture CTranslate2 cannot convert, OlmoForCausalLM) with random
weights over a byte-level BPE vocabulary of a few hundred tokens, and a tokenizer with a chat template,
saved as ``save_pretrained`` writes them."""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "What is 2 + 3? The answer is 5.",
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.",
    "Reasoning: add the two numbers. Final answer: 72",
    "You are a helpful assistant. Answer with the final number.",
]


def build_tiny_model(folder: Path, *, seed: int = 7, architecture: str = "Llama") -> Path:
    """Writes the tiny model (``architecture``: Llama or Olmo) and its tokenizer to ``folder`` and
    returns it."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(
            vocab_size=320, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token="<|im_start|>",
        chat_template=CHAT_TEMPLATE,
    )
    torch.manual_seed(seed)
    config = getattr(transformers, f"{architecture}Config")(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = getattr(transformers, f"{architecture}ForCausalLM")(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
