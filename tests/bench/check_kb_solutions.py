"""Check every KernelBench start solution against its problem's reference under TRITON_INTERPRET=1.

Run as a script (the test starts it in a subprocess, so the interpreter flag is set before triton is imported):
``python check_kb_solutions.py PROBLEMS_JSONL SOLUTIONS_DIR SIZES_JSON``. Problem sizes are shrunk with the
module-level overrides of SIZES_JSON (the interpreter runs every program instance in Python). Prints one JSON
line per solution: ``{"file", "ok", "error", "max_abs_err"}``.
"""

from __future__ import annotations

import json
import os
import sys
import types

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from htam_core.bench.kernelbench import find_start_solution, load_problems, reference_code  # noqa: E402


def _module(name: str, code: str) -> types.ModuleType:
    m = types.ModuleType(name)
    exec(compile(code, name, "exec"), m.__dict__)  # noqa: S102 - test helper on our own and KernelBench files
    return m


def main(problems: str, solutions: str, sizes_path: str) -> int:
    sizes = json.load(open(sizes_path))
    bad = 0
    for p in load_problems(problems, [1, 2]):
        sol = find_start_solution(solutions, p.level, p.problem_id)
        if sol is None:
            continue
        rec = {"file": sol.name, "ok": False, "error": None, "max_abs_err": None}
        try:
            ref = _module("ref", reference_code(p, sizes.get(f"{p.level}/{p.problem_id}")))
            new = _module("new", sol.read_text())
            init = ref.get_init_inputs()
            torch.manual_seed(42)
            model = ref.Model(*init)
            torch.manual_seed(42)
            model_new = new.ModelNew(*init)
            for seed in (42, 43):
                torch.manual_seed(seed)
                xs = ref.get_inputs()
                with torch.no_grad():
                    want = model(*xs)
                    got = model_new(*xs)
                assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
                err = (got - want).abs().max().item()
                rec["max_abs_err"] = max(err, rec["max_abs_err"] or 0.0)
                assert torch.allclose(got, want, atol=1e-4, rtol=1e-4), f"max abs err {err:.3g}"
            rec["ok"] = True
        except Exception as exc:  # noqa: BLE001 - reported per solution
            rec["error"] = f"{type(exc).__name__}: {exc}"
            bad += 1
        print(json.dumps(rec), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
