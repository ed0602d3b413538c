"""Run one case's launcher (start or an htam candidate) under the Triton interpreter on fixed inputs of several
sizes (many not a multiple of any block) and save the outputs, so start and candidate can be compared exactly.
Usage: TRITON_INTERPRET=1 python probe_outputs.py CASE DIR OUT.pt  (DIR holds the case's .py files)."""
import importlib
import sys

import torch

CASES = {
    "softmax_loop": ("run_softmax", "softmax", lambda g, s: (torch.randn(*s, generator=g),),
                     [(1, 1), (3, 100), (2, 128), (2, 129), (5, 300), (4, 1000)]),
    "layernorm": ("layernorm", "layernorm", lambda g, s: (torch.randn(*s, generator=g).bfloat16(),
                  torch.randn(s[1], generator=g).bfloat16(), torch.randn(s[1], generator=g).bfloat16()),
                  [(1, 1), (4, 200), (3, 256), (3, 257), (9, 777)]),
    "elementwise_small": ("silu_scale", "silu_scale", lambda g, s: (torch.randn(*s, generator=g), 1.5),
                          [(1,), (63,), (64,), (65,), (1000,), (1025,), (4097,)]),
    "matmul_fixed": ("matmul", "matmul", lambda g, s: (torch.randn(s[0], s[2], generator=g).half(),
                     torch.randn(s[2], s[1], generator=g).half()),
                     [(1, 1, 1), (32, 32, 32), (50, 70, 90), (100, 33, 65), (300, 20, 17)]),
    "colsum": ("colsum", "colsum", lambda g, s: (torch.randn(*s, generator=g),),
               [(1, 1), (10, 64), (33, 65), (100, 130), (257, 1000)]),
    "cross_entropy": ("cross_entropy", "cross_entropy", lambda g, s: (torch.randn(*s, generator=g).half(),
                      torch.randint(0, s[1], (s[0],), generator=g)),
                      [(1, 1), (4, 100), (2, 512), (2, 513), (3, 3001)]),
    "geglu": ("geglu", "geglu", lambda g, s: (torch.randn(s[0], 2 * s[1], generator=g).half(),),
              [(1, 1), (2, 64), (5, 300), (3, 1000)]),
    "rmsnorm_bwd": ("rmsnorm_bwd", "rmsnorm_bwd", lambda g, s: (torch.randn(*s, generator=g),
                    torch.randn(*s, generator=g), torch.randn(s[1], generator=g), torch.rand(s[0], generator=g) + 0.5),
                    [(1, 1), (3, 128), (6, 333), (4, 1000)]),
    "cumsum": ("cumsum", "row_cumsum", lambda g, s: (torch.randn(*s, generator=g),),
               [(1, 1), (2, 10), (5, 256), (3, 257), (7, 1000), (2, 3000)]),
    "bias_dropout": ("bias_dropout", "bias_dropout", lambda g, s: (torch.randn(*s, generator=g),
                     torch.randn(s[1], generator=g), 0.25, 1234),
                     [(1, 1), (3, 100), (2, 128), (8, 513), (4, 2000)]),
}

if __name__ == "__main__":
    case, folder, out = sys.argv[1:4]
    sys.path.insert(0, folder)
    mod_name, fn_name, make, sizes = CASES[case]
    fn = getattr(importlib.import_module(mod_name), fn_name)
    results = {}
    for s in sizes:
        g = torch.Generator().manual_seed(hash(s) % 1000)
        try:
            results[str(s)] = fn(*make(g, s))
        except Exception as e:  # noqa: BLE001 - recorded and compared as text
            results[str(s)] = f"{type(e).__name__}: {str(e)[:200]}"
    torch.save(results, out)
