"""cosim.sim.locate: a function of the user's own script runs on the RTL; what cannot be imported says how to fix it."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cosim
from cosim.sim import locate
from sw.testing import vta_tests as programs

ROOT = Path(__file__).resolve().parents[3]


def _run_script(path: Path, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(path), *args], cwd=path.parent, env=env, capture_output=True,
                          text=True, timeout=600)


def test_module_functions_travel_by_module_name():
    assert locate.locate(programs.gemm) == ("sw.testing.vta_tests", "gemm")
    assert locate.load("sw.testing.vta_tests", "gemm") is programs.gemm


def test_lambdas_and_nested_functions_say_how_to_fix_it():
    def inner():
        pass

    for fn in (lambda: 1, inner):
        with pytest.raises(ValueError, match=r"define it with `def` at the top level of a module or of your script"):
            locate.locate(fn)
    with pytest.raises(ValueError, match="needs a module-level function"):
        cosim.run(inner, config="small")


def test_a_script_function_travels_by_path_and_loads_without_its_main_block(tmp_path, monkeypatch):
    script = tmp_path / "user_script.py"
    script.write_text("import neighbour\nRAN_MAIN = False\ndef kernel(x):\n    return neighbour.twice(x)\n"
                      "if __name__ == '__main__':\n    RAN_MAIN = True\n")
    (tmp_path / "neighbour.py").write_text("def twice(x):\n    return 2 * x\n")
    monkeypatch.delitem(sys.modules, locate.SCRIPT_MODULE, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    fn = locate.load(locate.SCRIPT_PREFIX + str(script), "kernel")
    assert fn(21) == 42 and sys.modules[locate.SCRIPT_MODULE].RAN_MAIN is False
    with pytest.raises(AttributeError, match=r"script .*user_script.py defines no other when imported: define the "
                                             r"function at the top level, not inside `if __name__"):
        locate.load(locate.SCRIPT_PREFIX + str(script), "other")


def test_interactive_functions_say_to_use_a_file():
    code = ("import cosim.sim.locate as l\ndef k(): pass\n"
            "try:\n    l.locate(k)\nexcept ValueError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "defined in an interactive session or a notebook" in out.stdout
    assert "put it in a .py file and import it from there" in out.stdout


SCRIPT = """
    import sys
    import numpy as np
    import cosim
    from sw import runtime as rt
    from sw.isa import MemId

    def add_one(n):                      # a kernel of the user's own script
        cmd = rt.command_handle()
        buf = rt.buffer_alloc(n * 64)
        host = np.from_dlpack(rt.buffer_cpu_ptr(cmd, buf))
        host[:] = np.arange(n * 16, dtype=np.int32).view(np.uint8)
        return int(host.view(np.int32).sum()), type(rt.current().target).__name__

    {unguarded}
    if __name__ == "__main__":
        print(cosim.run(add_one, 2, config="small"))
"""


@pytest.mark.rtl
def test_cosim_run_of_a_function_of_the_users_script(tmp_path):
    script = tmp_path / "mine.py"
    script.write_text(textwrap.dedent(SCRIPT.format(unguarded="")))
    res = _run_script(script)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == "(496, 'RtlDevice')"


@pytest.mark.rtl
def test_an_unguarded_cosim_run_in_the_script_is_a_clear_error(tmp_path):
    script = tmp_path / "mine.py"
    script.write_text(textwrap.dedent(SCRIPT.format(unguarded='cosim.run(add_one, 1, config="small")')))
    res = _run_script(script)
    assert res.returncode == 1
    assert "cosim.run was called inside the co-simulation" in res.stderr
    assert 'put the cosim.run call under `if __name__ == "__main__":`' in res.stderr
