"""The HTTP connection the server speaks: uvicorn's h11 protocol with a deadline on reading
each request.

uvicorn (0.54) has no read timeout: its keep-alive timer waits for the first byte of a
request and is cancelled by any byte, so a client that sends half its headers, or its
headers and half a body, holds a connection for ever (uvicorn issue #1192). h11 keeps no
time at all. This protocol gives every request ``read_timeout`` seconds from the moment the
connection could carry it (opened, or the previous response sent) until the last byte of
its body; a client that misses it gets ``408 Request Timeout`` as JSON and is disconnected,
and the request handler, if one was waiting for the body, is told the client has gone.
"""

from __future__ import annotations

import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

READ_TIMEOUT = 10.0  # seconds; `transduce serve --read-timeout`


def _timeout_response(seconds: float) -> bytes:
    body = json.dumps(
        {
            "error": f"the request was not received within {seconds:g} s; "
            "send the headers and the whole body at once"
        }
    ).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def with_read_timeout(seconds: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol class whose requests must arrive within ``seconds``; give it
    to ``uvicorn.Config(http=...)``."""

    class ReadDeadlineH11Protocol(H11Protocol):
        _deadline = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()  # uvicorn waits for a first request without any limit

        def data_received(self, data: bytes) -> None:
            if self._deadline is None and self.conn.their_state is h11.IDLE:
                self._arm()  # a request starts on a kept-alive connection
            super().data_received(data)
            if self._request_read():
                self._disarm()

        def on_response_complete(self) -> None:
            self._disarm()  # uvicorn's keep-alive timer waits for the next request
            super().on_response_complete()
            if (
                not self.transport.is_closing()
                and self.conn.trailing_data[0]
                and not self._request_read()
            ):
                self._arm()  # a pipelined request, received in part

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _request_read(self) -> bool:
            """The client has sent a whole request, or ended its side."""
            return self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._timed_out)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _timed_out(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            cycle = self.cycle  # the one being read, or the previous request's
            if cycle is None or cycle.response_complete or not cycle.response_started:
                self.transport.write(_timeout_response(seconds))
            self.transport.close()  # connection_lost tells a waiting handler the client left

    return ReadDeadlineH11Protocol
