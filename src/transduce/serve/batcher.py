"""Concurrent translation requests, batched together for the batched beam search.

Requests wait in a queue; the batcher takes the first, keeps collecting for a short window
(or until enough sentences are waiting), and translates all sentences that share decoding
settings in one call. Each request then gets its own sentences' results, in its order.
The model runs in one worker thread, so the event loop keeps accepting requests meanwhile.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import time
from dataclasses import dataclass, field

from transduce.decoding.defaults import search_options


@dataclass
class _Request:
    key: tuple  # (beam, nbest, lenpen, n-gram block, early exit): equal settings batch
    lines: list[str]
    done: asyncio.Future = field(repr=False)


class Batcher:
    """Batch the ``search`` calls of concurrent requests.

    Args:
        search: ``search(lines, beam, lenpen, nbest) -> [[(text, score)]]``.
        window: seconds to keep collecting after the first request arrives.
        max_sentences: stop collecting once this many sentences wait.
    """

    def __init__(
        self,
        *,
        search,
        window: float = 0.01,
        max_sentences: int = 256,
        worker: concurrent.futures.Executor | None = None,
    ) -> None:
        self.search, self.window, self.max_sentences = search, window, max_sentences
        self.worker = worker or concurrent.futures.ThreadPoolExecutor(1, "transduce-model")
        self.queue: asyncio.Queue[_Request] | None = None
        self.task: asyncio.Task | None = None
        self.batches = 0  # how many model calls served how many requests (for /info)
        self.requests = 0

    def start(self) -> None:
        self.queue = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    async def translate(
        self,
        lines: list[str],
        beam: int,
        nbest: int,
        lenpen: float,
        no_repeat_ngram: int = 0,
        early_exit: bool = False,
    ):
        done = asyncio.get_running_loop().create_future()
        key = (beam, nbest, lenpen, no_repeat_ngram, early_exit)
        await self.queue.put(_Request(key, lines, done))
        return await done

    async def _collect(self) -> list[_Request]:
        batch = [await self.queue.get()]
        deadline = time.monotonic() + self.window
        waiting = len(batch[0].lines)
        while waiting < self.max_sentences:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(self.queue.get(), left))
            except asyncio.TimeoutError:
                break
            waiting += len(batch[-1].lines)
        return batch

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._collect()
            groups: dict[tuple, list[_Request]] = {}
            for request in batch:
                groups.setdefault(request.key, []).append(request)
            for (beam, nbest, lenpen, block, early), requests in groups.items():
                lines = [line for r in requests for line in r.lines]
                extra = search_options(block, early)
                try:
                    found = await loop.run_in_executor(
                        self.worker,
                        functools.partial(self.search, **extra),
                        lines,
                        beam,
                        lenpen,
                        nbest,
                    )
                except Exception as error:  # every waiting request learns of it
                    for r in requests:
                        if not r.done.done():
                            r.done.set_exception(error)
                    continue
                self.batches += 1
                self.requests += len(requests)
                start = 0
                for r in requests:  # each request gets its own lines' results, in order
                    if not r.done.done():
                        r.done.set_result(found[start : start + len(r.lines)])
                    start += len(r.lines)
