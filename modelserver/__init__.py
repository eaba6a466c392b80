"""A self-hosted OpenAI-compatible model server: chat completions with CTranslate2 on the CPU or
transformers (on a GPU, and as the fallback), fine-tuning jobs with TRL, on this machine's CPU or GPU.
``benchgen model serve`` starts it (``cli/model.py``).

Operator-side code, never deployed. Only this package imports torch, transformers, TRL and CTranslate2
(the ``model`` extra), and it loads weights only from a local folder, a GGUF file or a package, never from
a hub.
"""
