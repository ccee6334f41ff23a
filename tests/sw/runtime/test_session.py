"""sw.runtime.session: live handles, the process-wide runtime and each thread's own."""
import threading
from types import SimpleNamespace

from sw.runtime import session


def test_a_threads_runtime_does_not_leak_to_other_threads():
    base, mine = SimpleNamespace(handle=-101), SimpleNamespace(handle=-102)
    previous = session.set_current(base)
    seen = []
    try:
        with session.thread_current(mine):
            assert session.current(None) is mine and session.lookup(-102) is mine
            t = threading.Thread(target=lambda: seen.append(session.current(None)))
            t.start()
            t.join()
        assert seen == [base]                      # the other thread saw the process-wide runtime
        assert session.current(None) is base and session.lookup(-102) is None
    finally:
        session.set_current(previous)


class Target:
    pass


def test_default_runtime_made_once_and_run_locks_per_target():
    previous = session.set_current(None)
    made = []
    try:
        make = lambda: made.append(SimpleNamespace(handle=-103)) or made[-1]
        assert session.current(make) is session.current(make) and len(made) == 1
        session.shutdown()
        assert session.lookup(-103) is None
    finally:
        session.set_current(previous)
    a, b = Target(), Target()
    assert session.run_lock(a) is session.run_lock(a) and session.run_lock(a) is not session.run_lock(b)
    slotted = SimpleNamespace.__new__(SimpleNamespace)      # no weak references: kept by id
    assert session.run_lock(slotted) is session.run_lock(slotted)
