"""The cost of deploy verify's own client (the role's servespec_bench), against a bare client, same run.

    python bench/verify_overhead.py [--requests N] [--concurrency C] [--tokens T] [--delay-ms D]

Both clients send the same streaming completions to one local STAND-IN server (it streams T chunks,
D ms apart, like an engine decoding at a fixed speed; it is a stand-in for an engine's timing only).
The bare client reads the stream and notes the first chunk, nothing else. Printed: wall time and TTFT
p95 of each, their ratios, and the failed requests of each (the workload's own load is the only load).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.modules import ROLE, load_file  # noqa: E402

bench = load_file(ROLE / "module_utils" / "servespec_bench.py", "servespec_bench_for_bench")


def _server(tokens: int, delay: float) -> ThreadingHTTPServer:
    class StandIn(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for _ in range(min(tokens, body["max_tokens"])):
                time.sleep(delay)
                self.wfile.write(b'data: {"choices": [{"text": " w"}]}\n\n')
                self.wfile.flush()
            usage = {"prompt_tokens": 16, "completion_tokens": tokens}
            self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n".encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _bare(url: str, requests: int, concurrency: int, tokens: int) -> tuple[float, list[float], int]:
    """A minimal client: same requests and concurrency, first-chunk time only."""
    lock = threading.Lock()
    ttft: list[float] = []
    failed = [0]
    left = list(range(requests))

    def worker() -> None:
        while True:
            with lock:
                if not left:
                    return
                left.pop()
            body = json.dumps({"prompt": "x " * 16, "max_tokens": tokens, "stream": True}).encode()
            start = time.monotonic()
            try:
                with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=60) as response:
                    first = None
                    for line in response:
                        if first is None and line.startswith(b'data: {"choices": [{'):
                            first = time.monotonic() - start
                with lock:
                    ttft.append((first or 0.0) * 1000)
            except OSError:
                with lock:
                    failed[0] += 1

    started = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - started, ttft, failed[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--delay-ms", type=float, default=5.0)
    args = parser.parse_args()
    server = _server(args.tokens, args.delay_ms / 1000)
    url = f"http://127.0.0.1:{server.server_port}/v1/completions"
    workload = {
        "prompt_tokens": 16,
        "output_tokens": args.tokens,
        "concurrency": args.concurrency,
        "requests": args.requests,
        "max_seconds": 600,
    }
    bare_s, bare_ttft, bare_failed = _bare(url, args.requests, args.concurrency, args.tokens)
    started = time.monotonic()
    figures = bench.run(url, {"Content-Type": "application/json"}, None, workload)
    ours_s = time.monotonic() - started
    bare_p95 = statistics.quantiles(bare_ttft, n=20)[-1] if len(bare_ttft) > 1 else float("nan")
    server.shutdown()
    print(f"workload: {args.requests} requests x {args.tokens} tokens, concurrency {args.concurrency}")
    print(f"bare client      : {bare_s:8.3f} s, TTFT p95 {bare_p95:8.2f} ms, failed {bare_failed}")
    print(f"servespec_bench  : {ours_s:8.3f} s, TTFT p95 {figures['ttft_p95_ms']:8.2f} ms, failed {figures['failed']}")
    print(f"ratio wall time  : {ours_s / bare_s:.3f}")
    print(f"ratio TTFT p95   : {figures['ttft_p95_ms'] / bare_p95:.3f}")


if __name__ == "__main__":
    main()
