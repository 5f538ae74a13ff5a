"""What the audit log's seccomp listener costs a run: 5,000 opens for writing (each parks in
the fork server, which notes its path) against 5,000 opens for reading (never parked), in
the same sandbox, median of 5 runs each.

    .venv/bin/python benchmarks/sandbox_audit_cost.py
"""

import statistics

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering.sandbox import Sandbox  # noqa: E402

W = "import os,time\nt=time.perf_counter()\nfor i in range(5000):\n    fd=os.open(f'f{i%50}', os.O_WRONLY|os.O_CREAT, 0o644); os.close(fd)\nprint(time.perf_counter()-t)"
R = "import os,time\nopen('f','w').close()\nt=time.perf_counter()\nfor i in range(5000):\n    fd=os.open('f', os.O_RDONLY); os.close(fd)\nprint(time.perf_counter()-t)"


def main() -> None:
    parser(__doc__).parse_args()
    with Sandbox() as sb:
        for name, code in (("write-open", W), ("read-open", R)):
            xs = [float(sb.run(code).stdout) for _ in range(5)]
            print(
                name,
                "median s per 5000:",
                round(statistics.median(xs), 4),
                "-> us/call",
                round(statistics.median(xs) / 5000 * 1e6, 1),
            )


if __name__ == "__main__":
    main()
