"""What would make a plan fit, each with its estimated peak, from what is live at the peak.

Estimates (allocated bytes at the worst rank's peak, by category: P parameters, G gradients, O optimizer
state, A activations, T temporaries, C communication buffers):

* activation checkpointing per repeated block: ``A`` becomes one block's activations (recomputed in the
  backward) plus one input per other block (the smallest activation of each block stands for it);
* half the micro-batch: activations and temporaries halve;
* sharding the model state over ``n`` ranks (FSDP2 / ZeRO-3: ``(P+G+O)/n`` plus two gathered layers;
  ZeRO-2: ``P + (G+O)/n``; ZeRO-1: ``P + G + O/n``), for the script's world size and 8 ranks;
* when already sharded (FSDP/ZeRO), more ranks: the sharded state scales by ``world/new``.

Reserved memory adds the caching allocator's overhead at the peak (reserved/allocated of the plan).
"""
from __future__ import annotations

from typing import List


def suggestions(result) -> List[dict]:
    rank = result.worst()
    live = rank.get("live_at_peak") or {}
    if not live:
        return []
    p, g, o = live.get("parameters", 0), live.get("gradients", 0), live.get("optimizer state", 0)
    a, t, c = live.get("activations", 0), live.get("temporaries", 0), live.get("communication buffers", 0)
    total = p + g + o + a + t + c
    overhead = rank["peak_reserved"] / rank["peak_allocated"] if rank.get("peak_allocated") else 1.0
    capacity = result.device_memory
    out = []

    def add(what, peak_allocated, how):
        peak_reserved = int(peak_allocated * overhead)
        out.append({"suggestion": what, "estimated_peak_allocated": int(peak_allocated),
                    "estimated_peak_reserved": peak_reserved, "fits": peak_reserved <= capacity, "how": how})

    blocks = rank.get("activation_blocks") or {}
    repeated = {k: v for k, v in blocks.items() if k.split(".")[-1].isdigit()}
    if repeated and a:
        keep = max(repeated.values()) + sum(min(v, max(repeated.values()) // 8 or v) for v in repeated.values())
        add("activation checkpointing of each block", total - a + min(a, keep),
            "torch.utils.checkpoint.checkpoint around each block (or apply_activation_checkpointing)")
    if a or t:
        add("half the micro-batch", total - (a + t) / 2,
            "halve the per-rank batch (gradient accumulation keeps the global batch)")
    state = p + g + o
    sharded = result.world > 1 and rank.get("collectives") and any(
        "gather" in k or "reduce_scatter" in k for k in rank["collectives"])
    if not sharded and state:
        for n in sorted({max(2, result.world), 8}):
            gathered = 2 * max(repeated.values()) // 8 if repeated else 0
            add(f"FSDP2 (fully_shard) or ZeRO-3 on {n} NPUs", state / n + a + t + gathered,
                f"shard parameters, gradients and optimizer state over {n} ranks")
            add(f"DeepSpeed ZeRO-2 on {n} NPUs", p + (g + o) / n + a + t, "shard gradients and optimizer state")
            add(f"DeepSpeed ZeRO-1 on {n} NPUs", p + g + o / n + a + t, "shard optimizer state")
    elif sharded and state:
        for n in (result.world * 2, result.world * 4):
            add(f"{n} NPUs instead of {result.world}", state * result.world / n + a + t + c,
                "the sharded state spreads over more ranks")
    return out
