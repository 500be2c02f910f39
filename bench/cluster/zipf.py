"""Active tenant × operation pairs per minute under a Zipf skew (for docs/capacity.md). Pure arithmetic.

    .venv/bin/python bench/cluster/zipf.py [--tenants 10000] [--operations 100] [--s 1.1]
        [--rates 1000,10000,100000]

Tenant i (rank 1…T) sends a share i^-s / H(T, s) of all checks, and within a tenant operation j (rank 1…O)
takes a share j^-s / H(O, s), independently (the same popular operations for every tenant: the pessimistic
choice for skew, since it concentrates traffic on fewer pairs than per-tenant shuffles would, and so the
optimistic one for the active count). With checks arriving as a Poisson stream of R per second, a pair of
share p is active in a minute with probability 1 - exp(-60 R p). Prints, per rate: expected active pairs per
minute and their fraction of T × O, the busiest tenant's and pair's share, and the share of checks taken by
the top 1% of tenants.
"""

from __future__ import annotations

import argparse
import math


def shares(count: int, s: float) -> list[float]:
    weights = [rank**-s for rank in range(1, count + 1)]
    total = sum(weights)
    return [weight / total for weight in weights]


def active_pairs(tenants: list[float], operations: list[float], per_minute: float) -> float:
    """Expected pairs with at least one check in a minute."""
    return sum(1.0 - math.exp(-per_minute * t * o) for t in tenants for o in operations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--operations", type=int, default=100)
    parser.add_argument("--s", type=float, default=1.1, help="Zipf exponent, over tenants and over operations")
    parser.add_argument("--rates", default="1000,10000,100000", help="total checks per second, comma-separated")
    arguments = parser.parse_args()
    tenants, operations = shares(arguments.tenants, arguments.s), shares(arguments.operations, arguments.s)
    pairs = arguments.tenants * arguments.operations
    top = max(1, arguments.tenants // 100)
    print(f"Zipf s = {arguments.s} over {arguments.tenants:,} tenants and {arguments.operations} operations")
    print(f"busiest tenant {tenants[0]:.1%} of checks; busiest pair {tenants[0] * operations[0]:.2%};")
    print(f"top 1% of tenants ({top}) {sum(tenants[:top]):.1%}; top operation {operations[0]:.1%}")
    print("| checks/s | checks/min | active pairs per minute | of all pairs | busiest pair, checks/s |")
    print("|---|---|---|---|---|")
    for rate in (float(value) for value in arguments.rates.split(",")):
        active = active_pairs(tenants, operations, 60 * rate)
        busiest = rate * tenants[0] * operations[0]
        print(f"| {rate:,.0f} | {60 * rate:,.0f} | {active:,.0f} | {active / pairs:.1%} | {busiest:,.0f} |")


if __name__ == "__main__":
    main()
