"""`htam` with ``RankerConfig(variants=False)`` as the default: the method before v10 (docs/MEMORY.md), for a
before replay. Usage: ``python before_variants_off.py bench replay --table ... --out ...``."""

import dataclasses
import sys

import htam_core.memory.ranker as ranker
from htam_core.cli.main import main

if __name__ == "__main__":
    names = [f.name for f in dataclasses.fields(ranker.RankerConfig)]
    defaults = list(ranker.RankerConfig.__init__.__defaults__)
    defaults[names.index("variants")] = False
    ranker.RankerConfig.__init__.__defaults__ = tuple(defaults)
    assert ranker.RankerConfig().variants is False
    sys.exit(main(sys.argv[1:]))
