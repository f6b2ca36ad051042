"""A bounded load generator for `transduce serve` on this machine (tests and benchmarks):
clients in threads, each sending its requests one after another over a kept-alive
connection, every answer checked against the sentence it was asked for."""

from __future__ import annotations

import concurrent.futures
import statistics
import time
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class LoadResult:
    clients: int
    requests: int
    errors: list[str]
    mixed_up: int  # answers that were not the expected translation of their sentence
    seconds: float
    latencies: list[float]

    @property
    def sentences_per_s(self) -> float:
        return self.requests / self.seconds

    def summary(self) -> dict:
        ordered = sorted(self.latencies)
        return {
            "clients": self.clients,
            "requests": self.requests,
            "errors": len(self.errors),
            "mixed_up": self.mixed_up,
            "seconds": round(self.seconds, 2),
            "sentences_per_s": round(self.sentences_per_s, 1),
            "latency_p50_ms": round(1000 * statistics.median(ordered), 1),
            "latency_p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1),
        }


def run_load(
    url: str,
    sentences: list[str],
    expected: dict[str, str],
    clients: int,
    per_client: int,
    beam: int = 1,
    timeout: float = 120.0,
) -> LoadResult:
    """``clients`` threads × ``per_client`` POST /translate requests of one sentence each
    (client c asks for sentences[(c * per_client + i) % len(sentences)]). Only 127.0.0.1 or
    localhost may be targeted."""
    import httpx

    host = urlsplit(url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"load tests target this machine only, not {host}")
    deadline = time.monotonic() + timeout

    def client(c: int):
        latencies, errors, mixed = [], [], 0
        with httpx.Client(base_url=url, timeout=timeout) as http:
            for i in range(per_client):
                if time.monotonic() > deadline:
                    errors.append("deadline passed")
                    break
                sentence = sentences[(c * per_client + i) % len(sentences)]
                start = time.perf_counter()
                try:
                    reply = http.post("/translate", json={"sentences": [sentence], "beam": beam})
                except httpx.HTTPError as error:
                    errors.append(f"{type(error).__name__}: {error}")
                    continue
                latencies.append(time.perf_counter() - start)
                if reply.status_code != 200:
                    errors.append(f"{reply.status_code}: {reply.text[:200]}")
                elif reply.json()["translations"] != [expected[sentence]]:
                    mixed += 1
        return latencies, errors, mixed

    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(client, range(clients)))
    seconds = time.perf_counter() - start
    latencies = [x for lat, _, _ in results for x in lat]
    return LoadResult(
        clients,
        len(latencies),
        [e for _, errs, _ in results for e in errs],
        sum(m for _, _, m in results),
        seconds,
        latencies,
    )
