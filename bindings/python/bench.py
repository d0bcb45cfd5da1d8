"""The cost of a plan and of a search called from Python, against the same
calls in Rust: the Node module's bench data (`../node/bench/`: 100 tools,
the same policy), the same query. The Rust side is timed in this process,
interleaved with the Python rounds, so that both see the same machine
load. A changed plan, tool list or provider list is made by switching the
session between two contexts before each call, on both sides. Both sides
are timed in CPU time of this process, so that time the scheduler gives to
other processes counts on neither; wall time is printed too.

    python bench.py        (with the module built in release and installed)
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

from toolpolicy import Engine, _native

DATA = Path(__file__).resolve().parent.parent / "node" / "bench"
QUERY = "open a page in the browser"

engine = Engine((DATA / "bench.policy").read_text(encoding="utf-8"), (DATA / "registry.json").read_text(encoding="utf-8"), file="bench.policy")
chat = engine.session()


def timed(f: Callable[[], Any], n: int) -> Tuple[float, float]:
    """[CPU µs, wall µs] per call of `f`, over `n` calls."""
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        f()
    return (time.process_time() - c0) / n * 1e6, (time.perf_counter() - w0) / n * 1e6


def compare(name: str, py: Callable[[], Any], rust: str, n: int, setup: Optional[Callable[[int], None]] = None) -> None:
    """Medians of 15 interleaved rounds of the Python call and its Rust twin;
    `setup`, if given, runs before each Python round, untimed."""
    if setup:
        setup(n)
    py()
    a: List[Tuple[float, float]] = []
    b: List[Tuple[float, float]] = []
    for _ in range(15):
        if setup:
            setup(n)
        a.append(timed(py, n))
        cpu, wall = timed(lambda: _native._time_in_rust(engine, rust, QUERY, n), 1)
        b.append((cpu / n, wall / n))
    cp, wp = (statistics.median(x[k] for x in a) for k in (0, 1))
    cr, wr = (statistics.median(x[k] for x in b) for k in (0, 1))
    print(f"{name:<46} cpu: python {cp:8.2f} µs  rust {cr:8.2f} µs {cp - cr:8.2f} µs added   (wall: python {wp:8.2f}  rust {wr:8.2f})")


flip = [0]


def switched(f: Callable[[], Any]) -> Callable[[], Any]:
    def g() -> Any:
        flip[0] ^= 1
        chat.set_context({"flags": ["a" if flip[0] else "b"]})
        return f()

    return g


plan = chat.plan()
print(f"registry: {len(engine.tool_names)} tools; the plan declares {len(plan['declared'])} and defers {len(plan['deferred'])}")
compare("plan, unchanged (its parts kept)", chat.plan, "plan-cached", 2000)
compare("plan, changed (put together from kept definitions)", switched(chat.plan), "plan-switch", 300)
compare("tool_list, changed", switched(chat.tool_list), "tool-list-switch", 300)
compare("provider_tools('openai'), changed", switched(lambda: chat.provider_tools("openai")), "openai-switch", 300)
compare("plan_json, unchanged (the same string)", chat.plan_json, "plan-cached", 2000)
compare("json.loads(plan_json()), unchanged", lambda: json.loads(chat.plan_json()), "plan-cached", 300)

# Sessions made beforehand, so that the search alone is timed (the twin
# makes its own session inside the loop, which costs Rust 0.1 µs).
pool: List[Any] = []
nxt = [0]


def fill(n: int) -> None:
    pool[:] = [engine.session() for _ in range(n + 1)]
    nxt[0] = 0


def fresh_search() -> Any:
    nxt[0] += 1
    return pool[nxt[0] - 1].search(QUERY)


compare("search that loads (in a fresh session)", fresh_search, "search", 500, fill)
pool.clear()
compare("search (a new session, then the search)", lambda: engine.session().search(QUERY), "search", 500)
compare("a new session alone (part of the above)", engine.session, "session", 500)
s = engine.session()
s.search(QUERY)
compare("search, same session (nothing left to load)", lambda: s.search(QUERY), "search-again", 500)
