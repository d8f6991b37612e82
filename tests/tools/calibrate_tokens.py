"""Bytes per token of this repository's files under a real Claude tokenizer.

hookd estimates tokens from byte counts (daemon/src/budget/tokens.rs): the
tokenizer of current Claude models is not published. The newest one that is
ships with anthropic-sdk-python 0.25 (the Claude 2 era). This script measures
the byte-per-token ratios hookd's estimate is set from:

    python3 -m venv /tmp/tok && /tmp/tok/bin/pip install anthropic==0.25.0
    /tmp/tok/bin/python tests/tools/calibrate_tokens.py
"""

import os
import subprocess

import anthropic
from tokenizers import Tokenizer

PROSE = {"md", "txt", "rst"}
CODE = {"rs", "py", "ts", "tsx", "js", "go", "sh", "hbs", "toml", "yaml", "yml", "json"}

tokenizer = Tokenizer.from_file(os.path.join(os.path.dirname(anthropic.__file__), "tokenizer.json"))
totals = {"code": [0, 0], "prose": [0, 0]}
for path in subprocess.check_output(["git", "ls-files"], text=True).split():
    ext = path.rsplit(".", 1)[-1]
    kind = "prose" if ext in PROSE else "code" if ext in CODE else None
    if kind is None or path.startswith("tests/fixtures/"):
        continue
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    totals[kind][0] += len(text.encode())
    totals[kind][1] += len(tokenizer.encode(text).ids)
for kind, (size, tokens) in totals.items():
    print(f"{kind}: {size} bytes, {tokens} tokens, {size / max(tokens, 1):.2f} bytes per token")
