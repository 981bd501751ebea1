"""Integrations with the libraries real training code depends on (flash-attn, transformers,
accelerate, DeepSpeed, Lightning, apex, xformers, bitsandbytes).

Each integration is its own submodule and is imported only when used; importing this package
imports nothing else.
"""
