"""The warp merge of Welford triples ``(count, mean, M2)`` after a row loop split over the lanes.

Each lane runs Welford's recurrence (Welford, Technometrics 1962) over its own elements of the row with its own
count; after the loop, five ``__shfl_xor_sync`` butterfly steps merge the lanes' triples pairwise by the formula of
Chan, Golub and LeVeque ("Updating formulae and a pairwise algorithm for computing sample variances", 1979):
``n = na + nb; delta = mb - ma; mean = ma + delta * nb / n; M2 = M2a + M2b + delta * delta * na * nb / n``. Both
lanes of a pair take the lower lane's triple as ``a``, so they compute the same bits and every lane ends with the
row's triple, as the one thread had; a side that saw no element is taken as the other side exactly (``n == 0``
guarded). Read by :mod:`htam_core.transforms.cuda_warp_row`.
"""

from __future__ import annotations

__all__ = ["warp_welford_merge"]


def warp_welford_merge(mean: str, m2: str, count: str, mean_type: str, m2_type: str, count_type: str, lane: str,
                       write_back: str | None, indent: str) -> str:
    """The text after a loop (on new lines at ``indent``) that merges the lanes' Welford triples over a full warp.

    Args:
        mean, m2: the names of the running mean and M2 (``mean_type``/``m2_type``: their declared C types).
        count: C text of the lane's own element count (an explicit counter's name, or an expression of the lane).
        count_type: the C type the count is held and shuffled in (``int``, ``float``).
        lane: the name of the lane index (``0..31``) in scope.
        write_back: the explicit counter to set to the row's count after the merge, or ``None``.
        indent: the indentation of the loop the text follows.

    Returns:
        The C text, starting with a newline; every lane ends with the row's mean and M2 (and count).
    """
    t = mean_type
    lines = [
        "{",
        f"    {count_type} htam_wn = {count};",
        "    for (int htam_o = 16; htam_o > 0; htam_o >>= 1) {",
        f"        const {t} htam_om = __shfl_xor_sync(0xffffffffu, {mean}, htam_o);",
        f"        const {m2_type} htam_oq = __shfl_xor_sync(0xffffffffu, {m2}, htam_o);",
        f"        const {count_type} htam_on = __shfl_xor_sync(0xffffffffu, htam_wn, htam_o);",
        f"        const bool htam_lo = ({lane} & htam_o) == 0;  // both lanes of a pair merge (lower, upper)",
        f"        const {t} htam_ma = htam_lo ? {mean} : htam_om, htam_mb = htam_lo ? htam_om : {mean};",
        f"        const {m2_type} htam_qa = htam_lo ? {m2} : htam_oq, htam_qb = htam_lo ? htam_oq : {m2};",
        f"        const {t} htam_na = ({t})(htam_lo ? htam_wn : htam_on), htam_nb = ({t})(htam_lo ? htam_on : htam_wn);",
        f"        if (htam_nb == ({t})0) {{ {mean} = htam_ma; {m2} = htam_qa; }}",
        f"        else if (htam_na == ({t})0) {{ {mean} = htam_mb; {m2} = htam_qb; }}",
        "        else {",
        f"            const {t} htam_n = htam_na + htam_nb;",
        f"            const {t} htam_d = htam_mb - htam_ma;",
        f"            {mean} = htam_ma + htam_d * htam_nb / htam_n;",
        f"            {m2} = htam_qa + htam_qb + htam_d * htam_d * htam_na * htam_nb / htam_n;",
        "        }",
        "        htam_wn += htam_on;",
        "    }",
        *([f"    {write_back} = htam_wn;"] if write_back else []),
        "}",
    ]
    return "".join(f"\n{indent}{ln}" for ln in lines)
