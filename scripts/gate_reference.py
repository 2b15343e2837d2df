"""Keep ``app/trust/calibration/reference.json`` true: MiniLM-L6's scores of the shipped calibration pairs.

    python scripts/gate_reference.py            # print the reference
    python scripts/gate_reference.py --write    # rewrite the committed file
    python scripts/gate_reference.py --check    # exit 1 when recomputing it differs (> 1e-3)

The gate's dense thresholds were measured for that encoder; ``COMETA_GATE__CALIBRATION=auto`` moves them to
another encoder by matching these percentiles (``app.trust``, docs/trust.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from app.trust import compute_reference, load_reference  # noqa: E402
from retrieval.embed import DenseSettings, load_encoder  # noqa: E402

FILE = REPO / "app" / "trust" / "calibration" / "reference.json"


def differences(stored: dict[str, object], fresh: dict[str, object], tol: float = 1e-3) -> list[str]:
    """What differs between two references (numbers within ``tol``)."""
    out = [k for k in ("encoder", "set", "pairs") if stored.get(k) != fresh.get(k)]
    a, b = stored.get("quantiles"), fresh.get("quantiles")
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
        return [*out, "quantiles"]
    out += [
        f"quantile {i}: {x} != {y}" for i, (x, y) in enumerate(zip(a, b, strict=True)) if abs(x - y) > tol
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    fresh = compute_reference(
        load_encoder(DenseSettings(encoder="sentence-transformers", st_model=None))
    )  # MiniLM-L6
    text = json.dumps(fresh, indent=1) + "\n"
    if args.write:
        FILE.write_text(text, encoding="utf-8")
    elif args.check:
        bad = differences(load_reference(), fresh)
        print("\n".join(bad) or "reference up to date")
        return 1 if bad else 0
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
