"""serde_json's numbers: its f64 from decimal parts (no float_roundtrip) and its float text."""

from __future__ import annotations

import math

from ...errors import SerdeSyntax

U64_MAX = (1 << 64) - 1
I64_MIN = -(1 << 63)
# serde_json multiplies/divides by these exact powers (no float_roundtrip feature).
_POW10 = [float(f"1e{k}") for k in range(309)]


def format_float(x: float) -> str:
    """serde_json 1.0.151 (zmij) text of a finite f64: shortest digits, ``e+``/``e-`` form."""
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits, _, exp = repr(abs(x)).partition("e")
    mant = digits.replace(".", "")
    point = digits.index(".") if "." in digits else len(digits)
    e10 = point + (int(exp) if exp else 0)  # value = 0.mant * 10**e10
    stripped = mant.lstrip("0")
    e10 -= len(mant) - len(stripped)
    mant = stripped.rstrip("0") or "0"
    k = e10 - 1  # scientific exponent
    if -5 <= k < 16:
        if k >= 0:
            whole = mant[: k + 1].ljust(k + 1, "0")
            frac = mant[k + 1:] or "0"
            return f"{sign}{whole}.{frac}"
        return f"{sign}0.{'0' * (-k - 1)}{mant}"
    body = mant[0] + ("." + mant[1:] if len(mant) > 1 else "")
    return f"{sign}{body}e{'+' if k >= 0 else '-'}{abs(k)}"


def f64_from_parts(positive: bool, sig: int, exp: int) -> float:
    """serde_json's ``f64_from_parts`` (no float_roundtrip): one multiply or divide by 10**k."""
    f = float(sig)
    while True:
        if abs(exp) <= 308:
            if exp >= 0:
                f *= _POW10[exp]
                if math.isinf(f):
                    raise SerdeSyntax("number out of range")
            else:
                f /= _POW10[-exp]
            break
        if f == 0.0:
            break
        if exp >= 0:
            raise SerdeSyntax("number out of range")
        f /= 1e308
        exp += 308
    return f if positive else -f
