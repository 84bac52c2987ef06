# servespec: the benchmark client of `deploy verify` and `apply --verify`, run on the host beside the engine.
#
# Standard library only (it runs under the host's own Python, as every module of the role does). It sends a
# bounded number of streaming /v1/completions requests at a fixed concurrency (closed loop) or rate (open
# loop), times each (first token, the tokens after it, the whole request) and checks the results against the
# spec's slo.targets. Token counts are the engine's own (the stream's final `usage`), so the tokenizer is the
# staged model's and nothing is fetched; where an engine sends no usage, content chunks are counted.

from __future__ import annotations

import json
import math
import threading
import time
import urllib.error
import urllib.request

WORDS = [
    "river",
    "stone",
    "cloud",
    "paper",
    "lamp",
    "garden",
    "window",
    "music",
    "forest",
    "bridge",
    "candle",
    "winter",
    "harbor",
    "orange",
    "silver",
    "market",
    "planet",
    "meadow",
    "signal",
    "valley",
    "thunder",
    "mirror",
    "rocket",
    "pencil",
    "castle",
    "island",
    "ladder",
    "jacket",
    "engine",
]
"""Plain words for synthetic prompts: most tokenizers give one token each (the engine's count is used)."""

MAX_ERROR_CHARS = 300
TARGETS = {
    # name: (result key, "max" when the measured value must not exceed the target, "min" when it must reach it)
    "ttft_p95_ms": ("ttft_p95_ms", "max"),
    "itl_p95_ms": ("itl_p95_ms", "max"),
    "output_tokens_per_s": ("output_tokens_per_s", "min"),
    "requests_per_s": ("requests_per_s", "min"),
    "error_rate": ("error_rate", "max"),
}


def percentile(values, q):
    """The q-th percentile (0-100) by linear interpolation between closest ranks; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def synthetic_prompt(index, words):
    """A prompt of ``words`` plain words, starting with its own index so no two share a cached prefix."""
    body = [WORDS[(index * 7 + i) % len(WORDS)] for i in range(max(words - 1, 0))]
    return " ".join([str(index), *body])


def _event(raw):
    """The JSON object of one server-sent-events line; None for other lines; "done" at the end marker."""
    line = raw.decode("utf-8", "replace").strip()
    if not line.startswith("data:"):
        return None
    data = line[5:].strip()
    if data == "[DONE]":
        return "done"
    try:
        event = json.loads(data)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _stream(url, headers, body, timeout):
    """One streaming completion: (ttft_s, total_s, output_tokens, prompt_tokens or None); raises on failure."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    start = time.monotonic()
    first = None
    chunks = 0
    usage = {}
    with urllib.request.urlopen(request, timeout=timeout) as response:
        for raw in response:
            event = _event(raw)
            if event == "done":
                break
            if event is None:
                continue
            if "error" in event:
                raise RuntimeError(f"engine error: {str(event['error'])[:MAX_ERROR_CHARS]}")
            usage = event["usage"] if isinstance(event.get("usage"), dict) else usage
            choices = event.get("choices") or []
            # A token arrives as a choice chunk; its text may be empty (a byte of a multi-byte character that
            # the engine holds back), so the chunk, not its text, marks the first token.
            if choices and isinstance(choices[0], dict) and isinstance(choices[0].get("text"), str):
                chunks += 1
                first = time.monotonic() - start if first is None else first
    total = time.monotonic() - start
    tokens = _count(usage.get("completion_tokens"))
    tokens = chunks if tokens is None else tokens
    if first is None or tokens < 1:
        raise RuntimeError("the engine answered without generating a token")
    return first, total, tokens, _count(usage.get("prompt_tokens"))


class _Load:
    """One bounded run: requests handed out by index, each measured or failed, nothing after the deadline."""

    def __init__(self, url, headers, model, workload, prompts, clock):
        self.url, self.headers, self.model = url, headers, model
        self.workload, self.prompts, self.clock = workload, prompts, clock
        self.count = int(workload["requests"])
        self.started = clock()
        self.deadline = self.started + float(workload["max_seconds"])
        self.lock = threading.Lock()
        self.done = []
        self.failed = []
        self.next = 0

    def body(self, index):
        if self.prompts:
            entry = self.prompts[index % len(self.prompts)]
            prompt, tokens = entry["prompt"], entry["output_tokens"]
        else:
            workload = self.workload
            prompt = synthetic_prompt(index, int(workload["prompt_tokens"]))
            tokens = int(workload["output_tokens"])
        body = {
            "prompt": prompt,
            "max_tokens": tokens,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
            "ignore_eos": True,
        }
        if self.model:
            body["model"] = self.model
        return body

    def one(self, index):
        remaining = self.deadline - self.clock()
        outcome = "not started before max_seconds"
        if remaining > 0:
            try:
                outcome = _stream(self.url, self.headers, self.body(index), remaining)
            except (urllib.error.URLError, OSError, ValueError, RuntimeError) as err:
                outcome = str(err)[:MAX_ERROR_CHARS]
            if not isinstance(outcome, str) and self.clock() > self.deadline:
                outcome = "finished after max_seconds"
        with self.lock:
            (self.failed if isinstance(outcome, str) else self.done).append(outcome)

    def take(self):
        with self.lock:
            if self.next >= self.count:
                return None
            self.next += 1
            return self.next - 1

    def worker(self):
        while self.clock() < self.deadline:
            index = self.take()
            if index is None:
                return
            self.one(index)

    def start(self):
        """The threads of the run: ``concurrency`` workers (closed loop), or one per request at ``rate`` a second."""
        if self.workload.get("concurrency"):
            threads = [
                threading.Thread(target=self.worker, daemon=True) for _ in range(int(self.workload["concurrency"]))
            ]
            for thread in threads:
                thread.start()
            return threads
        threads = []
        interval = 1.0 / float(self.workload["rate"])
        for index in range(self.count):
            due = self.started + index * interval
            if due >= self.deadline:
                break
            time.sleep(max(due - self.clock(), 0))
            thread = threading.Thread(target=self.one, args=(index,), daemon=True)
            thread.start()
            threads.append(thread)
        return threads


def run(url, headers, model, workload, prompts=None, clock=time.monotonic):
    """Send the workload to ``url`` (the engine's /v1/completions) and measure it.

    ``workload``: slo.workload (prompt_tokens/output_tokens or ``prompts``, rate or concurrency, requests,
    max_seconds). ``prompts``: the dataset's [{"prompt", "output_tokens"}], used in turn. A request not
    finished by max_seconds counts as failed.
    """
    load = _Load(url, headers, model, workload, prompts, clock)
    for thread in load.start():
        thread.join(max(load.deadline - clock(), 0) + 1)
    elapsed = max(min(clock(), load.deadline) - load.started, 1e-9)
    with load.lock:
        done, failed = list(load.done), list(load.failed)
    failed += ["not finished before max_seconds"] * max(load.count - len(done) - len(failed), 0)
    return summarize(done, failed, load.count, elapsed)


def summarize(done, failed, sent, elapsed):
    """The run's figures from its finished requests [(ttft_s, total_s, tokens, prompt_tokens)] and failures."""
    ttft = [d[0] * 1000 for d in done]
    itl = [(d[1] - d[0]) * 1000 / (d[2] - 1) for d in done if d[2] > 1]
    tokens = sum(d[2] for d in done)
    prompt_counts = [d[3] for d in done if d[3] is not None]
    return {
        "requests": sent,
        "completed": len(done),
        "failed": len(failed),
        "error_rate": len(failed) / sent if sent else 0.0,
        "seconds": round(elapsed, 3),
        "ttft_p50_ms": _rounded(percentile(ttft, 50)),
        "ttft_p95_ms": _rounded(percentile(ttft, 95)),
        "itl_p50_ms": _rounded(percentile(itl, 50)),
        "itl_p95_ms": _rounded(percentile(itl, 95)),
        "output_tokens": tokens,
        "output_tokens_per_s": round(tokens / elapsed, 3),
        "requests_per_s": round(len(done) / elapsed, 3),
        "mean_prompt_tokens": _rounded(sum(prompt_counts) / len(prompt_counts)) if prompt_counts else None,
        "mean_output_tokens": _rounded(tokens / len(done)) if done else None,
        "errors": sorted(set(failed))[:5],
    }


def _rounded(value):
    return None if value is None else round(value, 3)


def evaluate(figures, targets):
    """One check per target: {target, limit, measured, ok}; a latency no request measured misses its target."""
    checks = []
    for name in sorted(targets):
        limit = targets[name]
        if limit is None or name not in TARGETS:
            continue
        key, sense = TARGETS[name]
        measured = figures.get(key)
        if measured is None:
            ok = False
        elif sense == "max":
            ok = measured <= limit
        else:
            ok = measured >= limit
        checks.append({"target": name, "limit": limit, "measured": measured, "ok": ok})
    if figures.get("output_tokens", 0) == 0:
        checks.append({"target": "output_tokens", "limit": 1, "measured": 0, "ok": False})
    return checks


def missed(checks):
    """One line naming every missed target ('' when all are met)."""
    out = []
    for check in checks:
        if not check["ok"]:
            sense = ">=" if TARGETS.get(check["target"], ("", "min"))[1] == "min" else "<="
            out.append(f"{check['target']} {check['measured']} (target {sense} {check['limit']})")
    return "; ".join(out)
