"""The directed run of ``make coverage`` beside the regression: :func:`directed_calls` lists the calls (each error
the hardware reports, the accelerator working again after them, and the programs of :mod:`cosim.verify.directed`),
:func:`check_directed` says what is wrong with their results.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sw.config import Config, load_config

from . import directed, faults
from .directed import FETCH_REFUSALS

__all__ = ["directed_calls", "AXI_CASES", "check_directed"]


def directed_calls(config: Config | str | None) -> list:
    """The directed programs of ``make coverage`` beside the regression on ``config``: each error the hardware reports
    (cosim.verify.faults, fetch's refusals, the AXI error responses), the accelerator working again after them, the
    register and field sweeps, token traffic, device memory at the top of the bus, and the programs for the bits only
    extreme values reach (huge transfers, the index and loop sweeps, saturated token queues, held pushes, full
    command queues), a conv2d with a residual (acc loads beside GEMMs of the other bank), and on a config with
    DEPTHWISE its edges (:func:`cosim.verify.directed.depthwise_window`, call 27; the last call stays last)."""
    from sw.testing import vta_tests as programs
    from sw.testing import workloads

    cfg = load_config(config)
    d = directed
    depthwise: list[tuple] = [(d.depthwise_window, (), {})] if cfg.DEPTHWISE else []
    return [(faults.deadlock, (), {}), (faults.reserved_flag, (), {}), (faults.bad_opcode, (), {}),
            (faults.bad_memory_type, (), {}), (faults.timeout, (), {}), (programs.vector_add, ("python",), {}),
            (d.register_sweep, (), {}), (d.empty_alu, (), {}), (d.token_traffic, (), {}),
            *((faults.axi_error, case, {}) for case in AXI_CASES), (programs.vector_add, ("python",), {}),
            (d.field_sweep, (), {}), (d.address_sweep, (), {}), (d.high_window, (), {}), (d.token_fill, (), {}),
            (d.huge_transfers, (), {}), (d.index_sweep, (), {}), (d.fetch_huge, (), {}), (d.fetch_refusals, (), {}),
            (d.loop_sweep, (), {}), (d.token_saturate, (), {}), (d.held_pushes, (), {}), (d.queue_fill, (), {}),
            # (several tiles of two reduction steps: the residual loads run beside the next tile's GEMMs)
            (workloads.run_conv2d_workload, (None, None, 28, 28, 64, 32, 3, 1, 1, 2, True, None, 0, True), {}),
            *depthwise, (d.empty_alu, (), {})]   # (a last launch clears the counters)


# the AXI error responses of the directed programs: a fetch beat, a load beat, two write beats
AXI_CASES = (("read", 0, "SLVERR"), ("read", 5, "DECERR"), ("write", 0, "DECERR"), ("write", 1, "SLVERR"))


def check_directed(results: Sequence[dict]) -> list:
    """Why the directed programs' results are wrong ([] when each did what it must)."""
    from hw import control

    want = ["WatchdogError", "VTAError", "VTAError", "VTAError", "RunTimeout"]
    bad = [f"directed program {i}: expected {w}, got {r.get('error')}" for i, (w, r) in enumerate(zip(want, results))
           if r.get("error") != w]
    if not np.array_equal(results[5]["result"], results[5]["expected"]):
        bad.append("vector_add after the faults: wrong result")
    for i, name in ((7, "empty_alu"), (8, "token_traffic")):
        if results[i]["error"] or results[i]["changed"]:
            bad.append(f"{name}: {results[i]['error']} {results[i]['message'][:300]}, {results[i]['changed']} bytes changed")
    for (channel, beat, response), r in zip(AXI_CASES, results[9:13]):
        if r.get("error") != "AxiResponseError" or f"{response} on the {channel} channel" not in r["message"]:
            bad.append(f"{response} on {channel} beat {beat}: expected an AxiResponseError naming it, got "
                       f"{r.get('error')}: {r.get('message', '')[:300]}")
    if not np.array_equal(results[13]["result"], results[13]["expected"]):
        bad.append("vector_add after the AXI errors: wrong result")
    if results[14]["error"] or results[14]["changed"]:
        bad.append(f"field_sweep: {results[14]['error']} {results[14]['message'][:300]}, "
                   f"{results[14]['changed']} bytes changed")
    if results[15]["error"]:
        bad.append(f"address_sweep: {results[15]['error']} {results[15]['message'][:300]}")
    high = results[16]
    if not np.array_equal(high["vector_add"]["result"], high["vector_add"]["expected"]):
        bad.append(f"vector_add with device memory at {high['window']:#x}: wrong result")
    if high["sweep"]["error"]:
        bad.append(f"address sweep at {high['window']:#x}: {high['sweep']['error']} {high['sweep']['message'][:300]}")
    if high["top_fetch"]["error"] or high["top_fetch"]["changed"]:
        bad.append(f"fetch from the top of device memory at {high['window']:#x}: {high['top_fetch']['error']} "
                   f"{high['top_fetch']['message'][:300]}, {high['top_fetch']['changed']} bytes changed")
    if results[17]["error"]:
        bad.append(f"token_fill: {results[17]['error']} {results[17]['message'][:300]}")
    *stopped, (_, _, _, _, small) = results[18]
    if small["error"] or small["changed"]:
        bad.append(f"huge_transfers, the small loads after: {small['error']} {small['message'][:300]}")
    for mem, case, channel, beat, r in stopped:
        if (r["error"] != "AxiResponseError" or f"DECERR on the {channel} channel" not in r["message"]
                or r["changed"]):
            bad.append(f"huge_transfers {mem} {case}: expected a DECERR on {channel} beat {beat} and nothing changed, "
                       f"got {r['error']}: {r['message'][:300]}, {r['changed']} bytes changed")
    if results[20]["error"] != "AxiResponseError" or "DECERR on the read channel" not in results[20]["message"]:
        bad.append(f"fetch_huge: expected a DECERR on the read channel, got {results[20]['error']}: "
                   f"{results[20]['message'][:300]}")
    if len(results[21]) < len(FETCH_REFUSALS):
        bad.append(f"fetch_refusals: {len(results[21])} results; {len(FETCH_REFUSALS)} refusals or more expected")
    for r in results[21]:
        if r["error"] != "VTAError" or r["code"] not in r["message"]:
            bad.append(f"fetch_refusals: expected a VTAError naming {r['code']}, got {r['error']}: {r['message'][:300]}")
    for name, r in zip(("load", "store", "compute"), results[25]):
        if r["error"] or r["changed"]:
            bad.append(f"queue_fill, the {name} queue: {r['error']} {r['message'][:300]}, {r['changed']} bytes changed")
    if not results[26].get("ok"):
        bad.append("conv2d with a residual (its loads beside the GEMMs): differs from numpy")
    if len(results) > 28:                   # the config has DEPTHWISE: its edges at 27
        dw = results[27]
        if dw["error"] or not np.array_equal(dw["result"], dw["expected"]):
            wrong = int(np.count_nonzero(dw["result"] != dw["expected"]))
            bad.append(f"depthwise_window: {dw['error']} {dw['message'][:300]}, {wrong} bytes differ from the reference")
    held = results[24].get("counters") or {}
    if results[24]["error"] or results[24]["changed"] or (held.get("tokens_g2l"), held.get("tokens_g2s")) != (255, 255):
        bad.append(f"held_pushes: {results[24]['error']} {results[24]['message'][:300]}, tokens "
                   f"{held.get('tokens_g2l')}/{held.get('tokens_g2s')}")
    tokens = {k: v for k, v in (results[23].get("counters") or {}).items() if k.startswith("tokens_")}
    if results[23]["error"] or sorted(tokens.values()) != [255] * 4:
        bad.append(f"token_saturate: {results[23]['error']} {results[23]['message'][:300]}, tokens {tokens}")
    if results[22]["error"] or results[22]["changed"]:
        bad.append(f"loop_sweep: {results[22]['error']} {results[22]['message'][:300]}, {results[22]['changed']} "
                   f"bytes changed")
    if results[19]["error"] or results[19]["changed"]:
        bad.append(f"index_sweep: {results[19]['error']} {results[19]['message'][:300]}, "
                   f"{results[19]['changed']} bytes changed")
    err = high["axi_error"]
    if err["error"] != "AxiResponseError" or f"burst at {err['base']:#x}" not in err["message"]:
        bad.append(f"SLVERR with device memory at {high['window']:#x}: expected an AxiResponseError at offset "
                   f"{err['base']:#x}, got {err['error']}: {err['message'][:300]}")
    sweep = dict(results[6])
    bad += [f"register {off:#x}: wrote 0xffffffff, read {v:#x}" for off, v in sweep.pop("ones").items()
            if v != 0xFFFFFFFF]
    if sweep.pop("far"):
        bad.append("the last word of the register window (unmapped) did not read 0")
    writable = {r.offset for r in control.REGISTER_MAP if r.access == "RW"}
    for off, (first, second) in sweep.items():
        if off in writable and off != 0 and first != 0x1000 + off:
            bad.append(f"register {off:#x}: wrote {0x1000 + off:#x}, read {first:#x}")
        if off not in writable and first != second:
            bad.append(f"register {off:#x}: a write to a read-only register changed it ({first:#x} -> {second:#x})")
    return bad
