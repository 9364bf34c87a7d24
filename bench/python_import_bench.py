"""How long `import devplace` takes in a fresh interpreter, and whether it
maps libtorch (BENCHMARKS.md, "From Python").

    /usr/bin/python3 bench/python_import_bench.py --runs 9 build/python [OTHER_PYTHONPATH ...]

Each PYTHONPATH given is a build's python folder (one holding the package
devplace); with more than one, the runs alternate between them round by
round, so that the machine's load falls on each alike. Per path it prints
the median and range of the import alone (timed inside the interpreter)
and of the whole process (start, import, exit).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SCRIPT = """
import time
start = time.perf_counter()
import devplace
seconds = time.perf_counter() - start
with open("/proc/self/maps") as f:
    libtorch = "libtorch" in f.read()
import json
print(json.dumps({"import_s": seconds, "libtorch": libtorch}))
"""


def one_run(python_path):
    env = dict(os.environ, PYTHONPATH=python_path, PYTHONDONTWRITEBYTECODE="1")
    start = time.perf_counter()
    completed = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True)
    process_s = time.perf_counter() - start
    report = json.loads(completed.stdout)
    return report["import_s"], process_s, report["libtorch"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="PYTHONPATHs, each holding a package devplace")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    results = {path: [] for path in args.paths}
    one_run(args.paths[0])  # the page cache warmed for every path alike
    for _ in range(args.runs):
        for path in args.paths:
            results[path].append(one_run(path))
    for path, runs in results.items():
        imports = [r[0] for r in runs]
        processes = [r[1] for r in runs]
        print(f"{path}: libtorch mapped: {sorted(set(r[2] for r in runs))}; import devplace median "
              f"{statistics.median(imports) * 1000:.0f} ms ({min(imports) * 1000:.0f}-{max(imports) * 1000:.0f}); "
              f"process median {statistics.median(processes) * 1000:.0f} ms "
              f"({min(processes) * 1000:.0f}-{max(processes) * 1000:.0f}), {len(runs)} runs")


if __name__ == "__main__":
    main()
