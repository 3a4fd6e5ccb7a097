"""`vmap_chunk` chosen from memory when a vectorised job leaves it unset.

The vectorised trainer's first chunk is one client, trained for real under `PeakTensorMemory`
(peak_memory.py): its peak tensor bytes are what one more client adds to a chunk (every tensor of a
vectorised step has the client dimension: the (C, P) weights, gradients, FedProx's proximal gap,
the activations), and the bytes still held after it are what every trained client keeps until
the round ends (its final weights, in its outcome). A round of n clients in chunks of c then
peaks near n·kept + c·(peak − kept)·WORKSPACE, which must fit the budget:

    c = ⌊(budget − n·kept) / (WORKSPACE·(peak − kept))⌋, at least 1, at most n.

WORKSPACE covers what the tracker does not see: buffers kernels allocate inside themselves
(im2col of convolutions, BLAS packing) and the allocator's slack. Measured on the FEMNIST CNN with
FedProx on CPU (one thread, one process per chunk of 1, 2, 5, 10 and 20 clients): the peak RSS grew
110 MB a client, the tracked tensors 76 MB; less the 25 MB of kept weights in both, 85 vs 51 MB
of step temporaries, 1.7x; 2 leaves room beyond that.

The budget is FRACTION of the memory available now (CPU: MemAvailable of /proc/meminfo; CUDA:
torch.cuda.mem_get_info's free bytes), on CPU with c·WORKSPACE·(peak − kept) also at most
CPU_STEP_BYTES; or the bytes in $FEDBENCH_VMAP_MEMORY (e.g. 4G, 512M), uncapped.
The choice and its reasons are recorded (ExecutionRecord.vmap_chunk, summary.json).
"""

from __future__ import annotations

import os
import re

import torch

from benchmark.errors import UserError

BUDGET_ENV = "FEDBENCH_VMAP_MEMORY"
FRACTION = 0.5  # of the available memory: the rest for the process's other data, other processes
WORKSPACE = 2.0  # process bytes per tracked tensor byte of a step (measured; see above)
# On CPU a chunk's step temporaries are capped too: past a few hundred MB batching buys no speed
# there and streaming more costs it (FedProx, FEMNIST CNN, 50 clients, one thread: chunks of 5, 10
# and 25 ran 1.07-1.08x sequential, all 50 at once 0.96x; benchmarks/README.md).
CPU_STEP_BYTES = 2 * 2**30
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_bytes(text: str) -> int:
    """ "4G", "512M", "1.5G", "1000000" -> bytes (binary units; a trailing B or iB is allowed)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", text.upper())
    if match is None or float(match[1]) <= 0:
        raise UserError(f"${BUDGET_ENV}={text!r}: give a positive size in bytes, e.g. 4G, 512M or 1000000")
    return int(float(match[1]) * _UNITS[match[2]])


def available_bytes(device: torch.device) -> int:
    """Memory free for new tensors on `device` now."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")  # free pages: no page cache counted


def budget(device: torch.device) -> tuple[int, int | None, str]:
    """(bytes a round's vectorised training may use, the cap on one chunk's step temporaries or None,
    where these come from)."""
    if text := os.environ.get(BUDGET_ENV):
        return parse_bytes(text), None, f"${BUDGET_ENV}={text}"
    free = available_bytes(device)
    cap = CPU_STEP_BYTES if device.type == "cpu" else None
    capped = f", step temporaries at most {cap / 2**20:,.0f} MiB" if cap else ""
    return int(FRACTION * free), cap, f"{FRACTION:g} x {free / 2**20:,.0f} MiB available on {device.type}{capped}"


def choose(clients: int, peak: int, kept: int, device: torch.device) -> tuple[int, dict]:
    """(the chunk for rounds of `clients` clients, the record of why) from a one-client chunk's
    `peak` tracked bytes and the bytes it `kept`."""
    limit, cap, source = budget(device)
    per_client = max(WORKSPACE * (peak - kept), 1.0)  # what one more client in a chunk adds, transiently
    fit = (limit - clients * kept) // per_client
    chunk = int(min(max(min(fit, cap // per_client if cap else fit), 1), clients))
    floor = " (1: not even that fits)" if fit < 1 else ""
    return chunk, {
        "chunk": chunk,
        "why": f"a one-client chunk peaked at {peak / 2**20:,.1f} MiB of tensors and kept {kept / 2**20:,.1f} MiB; "
        f"{clients} clients' kept weights plus {chunk}{floor} x {WORKSPACE:g} x the difference fit the budget",
        "budget_bytes": limit,
        "budget_from": source,
        "probe_peak_bytes": peak,
        "probe_kept_bytes": kept,
    }
