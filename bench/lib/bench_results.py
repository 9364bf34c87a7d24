"""Reading what devplace runs left behind, for the table scripts under bench/."""
import csv
import json


def load(path):
    """The JSON a devplace run printed, or None when it failed."""
    try:
        with open(path) as f:
            text = f.read()
        return json.loads(text) if text.strip() else None
    except (OSError, ValueError):
        return None


def search_cost(curve_path):
    """Seconds and samples until the best so far came within 1 % of the run's
    final best (from its curve.csv), or None when no sampled placement ran."""
    try:
        with open(curve_path) as f:
            curve = list(csv.DictReader(f))
    except OSError:
        return None
    bests = [float(r["best_step_time_s"]) for r in curve]
    ran = [b for b in bests if b > 0]
    if not ran:
        return None
    for r, b in zip(curve, bests):
        if 0 < b <= 1.01 * ran[-1]:
            return float(r["seconds"]), int(r["samples"])
    return None
