"""Clients that open a connection and stop sending half-way are disconnected with a 408 once
the server's read timeout passes, and the server keeps serving everyone else."""

import socket
import time
import urllib.request

from tests.helpers.serving import serve

HALF_HEADERS = b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"
HALF_BODY = (
    b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
    b'\r\nContent-Length: 40\r\n\r\n{"sentences": ["one'
)


def _stall(url: str, request: bytes) -> socket.socket:
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    if request:
        sock.sendall(request)
    return sock


def _answer(sock: socket.socket, wait: float) -> bytes | None:
    """What the server sent before closing the connection, or None while it still holds it
    after ``wait`` seconds."""
    sock.settimeout(wait)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return received


def test_stalled_requests_are_timed_out_and_the_server_keeps_serving(trained_run):
    with serve(trained_run, "--threads", "1", "--read-timeout", "1") as url:
        kinds = {"no bytes": b"", "half the headers": HALF_HEADERS, "half the body": HALF_BODY}
        stalled = {
            name: [_stall(url, request) for _ in range(7)] for name, request in kinds.items()
        }  # 21 connections
        start = time.monotonic()
        answers = {}
        for name, sockets in stalled.items():
            for sock in sockets:
                answer = _answer(sock, max(0.1, start + 10 - time.monotonic()))
                sock.close()
                if answer:  # a JSON error that says what to do
                    assert b'{"error": ' in answer and answer.endswith(b'at once"}'), answer
                answers.setdefault(name, set()).add(answer[:28] if answer else "held 10 s")
        assert answers == dict.fromkeys(kinds, {b"HTTP/1.1 408 Request Timeout"})
        with urllib.request.urlopen(url + "health", timeout=10) as response:
            assert response.status == 200


def test_a_slow_but_timely_request_is_answered(trained_run):
    with serve(trained_run, "--threads", "1", "--read-timeout", "5") as url:
        sock = _stall(url, HALF_BODY)
        time.sleep(1)
        sent = len(HALF_BODY.partition(b"\r\n\r\n")[2])
        sock.sendall(b'", "two"]}'.ljust(40 - sent))  # the 40 bytes the length announced
        answer = _answer(sock, 30)
        sock.close()
        assert answer is not None and answer.startswith(b"HTTP/1.1 200 "), answer
        assert b'"translations"' in answer
