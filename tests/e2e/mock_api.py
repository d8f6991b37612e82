#!/usr/bin/env python3
"""A scripted stand-in for the Anthropic Messages API, for the end-to-end tests.

Claude Code (`claude -p`, ANTHROPIC_BASE_URL pointing here) sends
`POST /v1/messages?beta=true` (SSE when the body says "stream": true) and
`POST /v1/messages/count_tokens`. This server answers:

- the compaction summary request (its last user message asks for a detailed
  summary, "CRITICAL: Respond with TEXT ONLY") with the script's summary,
  whose `hookd-state` blocks get the token hookd's PreCompact instructions
  (passed on in the request) ask for, as a summarizer that follows them would;
- every other /v1/messages request with the script's next reply, in order;
  when the script runs out, with an error text the tests look for;
- with lanes, a request whose messages name `LANE-<name>` (a lane of the
  script) from that lane's replies and summaries instead, so that sessions
  running at once each follow their own script;
- count_tokens with the last context size it reported.

Each reply reports the `usage` the script chose: the context size `tokens` is
split as Claude Code's own replies split it (input, cache creation, cache
read), so a client that sums the three sees exactly `tokens`.

Every request is appended to the log (one JSON object a line: `n`, `t` when
it arrived in seconds since the epoch, `path`, `kind`
main|summary|count_tokens|other, `label` of the reply given, `stream`,
`body`) before it is answered, so a test can assert what reached the model.

The script is a JSON file:
    {"replies": [{"label": "t1.tool", "tokens": 83500,
                  "content": [{"type": "text", "text": "..."},
                              {"type": "tool_use", "name": "Bash",
                               "input": {"command": "ls"}}]}, ...],
     "summary": {"text": "...", "tokens": 3000},
     "summaries": [{"text": "...", "tokens": 3000}, ...],
     "lanes": {"alpha": {"replies": [...], "summaries": [...]}, ...}}
"summaries", when given, answer the summary requests in order (the last one
again once they run out) in place of "summary".
A reply with a tool_use block stops with "tool_use", else "end_turn";
tool_use ids are `toolu_e2e_<reply number>_<block number>`.

It binds 127.0.0.1 on a free port and writes the port to --port-file once it
listens. With --loopback-up it first brings up `lo`, which a fresh network
namespace (`unshare -rn`) starts with down. Standard library only.
"""

import argparse
import fcntl
import json
import os
import re
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SUMMARY_MARKER = "CRITICAL: Respond with TEXT ONLY"
EXHAUSTED = "MOCK_SCRIPT_EXHAUSTED"
MODEL_FALLBACK = "claude-sonnet-4-5-20250929"


def loopback_up():
    """`ip link set lo up`, without needing iproute2."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, siocgifflags, request))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH", b"lo", flags | iff_up))


def usage_for(tokens, output_tokens):
    """The context size split the way Claude Code's replies report it."""
    input_tokens = tokens // 100
    cache_creation = tokens // 10
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_creation,
        "cache_read_input_tokens": tokens - input_tokens - cache_creation,
        "output_tokens": output_tokens,
    }


def text_of(content):
    """All the text in a message's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict):
            if isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif "content" in block:
                parts.append(text_of(block["content"]))
    return "\n".join(parts)


BLOCK_REQUEST = re.compile(r"info string `hookd-state ([0-9a-f]+)`")
BLOCK_FENCE = re.compile(r"^(\s*```+)hookd-state[ \t]*$", re.MULTILINE)


def answer_block_request(body, summary):
    """The summary with the token the request's latest instructions ask for
    after each `hookd-state` info string; as it is when they ask for none."""
    # The latest instructions count: an earlier compaction's may still be
    # in the conversation.
    asked = BLOCK_REQUEST.findall(json.dumps(body))
    if not asked:
        return summary
    return BLOCK_FENCE.sub(lambda m: f"{m.group(1)}hookd-state {asked[-1]}", summary)


def is_summary_request(body):
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return bool(users) and SUMMARY_MARKER in text_of(users[-1].get("content"))


LANE = re.compile(r"LANE-([a-z0-9]+)")


class Script:
    """One stream of replies and summaries."""

    def __init__(self, script):
        self.replies = list(script.get("replies", []))
        summaries = script.get("summaries") or [script.get("summary", {})]
        self.summaries = [
            {"text": s.get("text", "<summary>MOCK_SUMMARY</summary>"), "tokens": s.get("tokens", 3000)}
            for s in summaries
        ]
        self.next_reply = 0
        self.next_summary = 0

    def reply(self):
        if self.next_reply < len(self.replies):
            reply = self.replies[self.next_reply]
            self.next_reply += 1
            return reply.get("label", f"reply {self.next_reply}"), reply
        return EXHAUSTED, {"content": [{"type": "text", "text": EXHAUSTED}]}

    def summary(self):
        summary = self.summaries[min(self.next_summary, len(self.summaries) - 1)]
        self.next_summary += 1
        return summary


class Mock:
    def __init__(self, script, log_path):
        self.main = Script(script)
        self.lanes = {name: Script(lane) for name, lane in script.get("lanes", {}).items()}
        self.log_path = log_path
        self.lock = threading.Lock()
        self.requests = 0
        self.last_tokens = 0

    def script_for(self, body):
        """The lane the request's messages name first, else the main script."""
        for name in LANE.findall(json.dumps(body.get("messages", []))):
            if name in self.lanes:
                return self.lanes[name]
        return self.main

    def answer(self, path, body):
        """Logs the request; returns the response body, or None for a 404."""
        with self.lock:
            self.requests += 1
            kind, label, reply = self.choose(path, body)
            entry = {
                "n": self.requests,
                "t": time.time(),
                "path": path,
                "kind": kind,
                "label": label,
                "stream": bool(body.get("stream")),
                "body": body,
            }
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")
            if kind == "other":
                return None
            if kind == "count_tokens":
                return {"input_tokens": self.last_tokens}
            self.last_tokens = reply.get("tokens", self.last_tokens)
            return self.message(self.requests, body, reply, self.last_tokens)

    def choose(self, path, body):
        """(kind, label, reply) for a request."""
        if path.startswith("/v1/messages/count_tokens"):
            return "count_tokens", "count_tokens", None
        if not path.startswith("/v1/messages"):
            return "other", "not found", None
        script = self.script_for(body)
        if is_summary_request(body):
            summary = script.summary()
            text = answer_block_request(body, summary["text"])
            return "summary", "summary", dict(summary, content=[{"type": "text", "text": text}])
        label, reply = script.reply()
        return "main", label, reply

    @staticmethod
    def message(n, body, reply, tokens):
        content = []
        for i, block in enumerate(reply["content"]):
            block = dict(block)
            if block["type"] == "tool_use":
                block.setdefault("id", f"toolu_e2e_{n:03}_{i}")
            content.append(block)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        return {
            "id": f"msg_e2e_{n:03}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", MODEL_FALLBACK),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage_for(tokens, reply.get("output_tokens", 40)),
        }


def sse_events(message):
    """The streaming form of a message, event by event."""
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = dict(message["usage"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": start}
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_start", {
            "type": "content_block_start",
            "index": i,
            "content_block": opening,
        }
        yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"]},
    }
    yield "message_stop", {"type": "message_stop"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mock = None  # set in main()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        message = self.mock.answer(self.path, body)
        if message is None:
            self.not_found()
        elif body.get("stream") and "content" in message:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for event, data in sse_events(message):
                self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True
        else:
            payload = json.dumps(message).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    def do_GET(self):
        self.mock.answer(self.path, {"method": "GET"})
        self.not_found()

    def not_found(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--loopback-up", action="store_true")
    args = parser.parse_args()
    if args.loopback_up:
        loopback_up()
    with open(args.script, encoding="utf-8") as f:
        Handler.mock = Mock(json.load(f), args.log)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
