"""The timeline picture (cosim.perf.timeline): busy intervals from a trace, and the PNG."""
import numpy as np

from cosim.perf import timeline

# (cycle, module, busy): module 0 fetch, 1 load, 2 compute, 3 store
TRACE = np.array([
    [100, 0, 1], [104, 0, 0],                     # fetch busy 4 cycles
    [105, 1, 1], [140, 1, 0], [150, 1, 1], [170, 1, 0],
    [140, 2, 1], [150, 2, 0], [170, 2, 1],        # compute still busy at the end of the trace
    [160, 3, 0],                                  # store idle without a start: busy from the first cycle
    [150, 3, 0],                                  # a repeated idle event is ignored
    [200, 1, 1], [200, 1, 1], [210, 1, 0],        # a repeated busy event is ignored
    [230, 3, 1], [231, 3, 0],
], dtype=np.int64)


def test_intervals_from_a_synthetic_trace():
    shuffled = TRACE[np.random.default_rng(1).permutation(len(TRACE))]    # rows are sorted by cycle first
    for trace in (TRACE, shuffled):
        spans = timeline.intervals(trace)
        assert timeline.trace_span(trace) == (100, 231)
        assert spans[0].tolist() == [[100, 104]]
        assert spans[1].tolist() == [[105, 140], [150, 170], [200, 210]]
        assert spans[2].tolist() == [[140, 150], [170, 231]]
        assert spans[3][-1].tolist() == [230, 231]
        assert timeline.busy_cycles(spans)[:3] == [4, 35 + 20 + 10, 10 + 61]
    spans = timeline.intervals(TRACE)
    assert spans[3].tolist() == [[100, 150], [230, 231]]    # the first idle event closes the open span


def test_intervals_clip_to_a_window_and_handle_empty_traces():
    spans = timeline.intervals(TRACE, start=120, end=205)
    assert spans[1].tolist() == [[120, 140], [150, 170], [200, 205]]
    assert spans[2].tolist() == [[140, 150], [170, 205]]
    assert spans[0].shape == (0, 2)
    empty = timeline.intervals(np.zeros((0, 3), dtype=np.int64))
    assert len(empty) == len(timeline.MODULES) == 6 and all(s.shape == (0, 2) for s in empty)
    assert timeline.trace_span([]) == (0, 0)


def test_draw_writes_a_png(tmp_path):
    second = TRACE.copy()
    second[:, 0] += 5000                                 # absolute cycles: each panel starts at its own zero
    path = timeline.draw([("one thread: 131 cycles", TRACE), ("two threads", second), ("no events", TRACE[:0])],
                         tmp_path / "out" / "t.png", title="synthetic")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_draw_zooms_into_a_window(tmp_path):
    path = timeline.draw([("zoom", TRACE)], tmp_path / "z.png", window=(0, 50))
    assert path.stat().st_size > 2000
