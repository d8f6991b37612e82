// The plugin itself, under Node (`node --test`), fed the hook calls the
// real OpenCode 1.18.33 made in one run (tests/fixtures/opencode/hooks.jsonl:
// a prompt, two tool calls, an automatic compaction, one more tool call).
// tests/integration/opencode.rs runs it against a real daemon, with
// HOOKD_HOOKCTL (the hookctl to run), OPENCODE_TEST_CWD (a git work tree)
// and hookd's socket and directories in the environment.

import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const fixture = join(here, "../../tests/fixtures/opencode/hooks.jsonl");

// The recorded calls, with this run's project directory.
function recorded(cwd) {
  return readFileSync(fixture, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line.replaceAll("$CWD", cwd)));
}

// A fresh plugin instance with `env` as its environment.
async function plugin(env, cwd) {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const { HookdPlugin } = await import(`./hookd.js?${Math.random()}`);
    return await HookdPlugin({ directory: cwd, worktree: cwd });
  } finally {
    for (const key of Object.keys(env)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

// Calls each recorded hook as OpenCode did; returns the calls with the
// outputs as the plugin left them.
async function replay(hooks, calls) {
  for (const call of calls) {
    const hook = hooks[call.hook];
    if (!hook) continue;
    if (call.hook === "event") await hook(call.input);
    else await hook(call.input, call.output);
  }
  return calls;
}

const marker = /\[hookd-resume [0-9a-f]+\]/g;

function markersIn(call) {
  const text = JSON.stringify(call.output ?? {});
  return text.match(marker) ?? [];
}

test("with hookd: the state goes into the compaction, the resume prompt into the first request after it, once", async (t) => {
  const hookctl = process.env.HOOKD_HOOKCTL;
  const cwd = process.env.OPENCODE_TEST_CWD;
  if (!hookctl || !cwd) return t.skip("run by tests/integration/opencode.rs, against a daemon");
  const hooks = await plugin({}, cwd);
  const calls = await replay(hooks, recorded(cwd));

  const compacting = calls.find((c) => c.hook === "experimental.session.compacting");
  assert.equal(compacting.output.context.length, 1, "hookd's words for the compaction request");
  assert.ok(compacting.output.context[0].length > 0);

  const compacted = calls.findIndex(
    (c) => c.hook === "event" && c.input.event.type === "session.compacted",
  );
  const carriers = calls
    .map((c, i) => [i, c, markersIn(c)])
    .filter(([, , found]) => found.length > 0);
  assert.equal(carriers.length, 1, "one call carries the resume prompt");
  const [at, carrier, found] = carriers[0];
  assert.equal(found.length, 1);
  assert.equal(carrier.hook, "experimental.chat.system.transform");
  assert.ok(at > compacted, "after the compaction");
  const firstRequest = calls.findIndex(
    (c, i) => i > compacted && c.hook === "experimental.chat.system.transform",
  );
  assert.equal(at, firstRequest, "the first request after it");

  // The title request's system prompt is left alone.
  const title = calls.find((c) => c.hook === "experimental.chat.system.transform");
  assert.equal(title.output.system.length, 1);

  // The log holds OpenCode's figures and the text hookd gave the model.
  const dir = join(process.env.HOOKD_STATE_DIR, "opencode");
  const [file] = readdirSync(dir);
  const lines = readFileSync(join(dir, file), "utf8").trim().split("\n").map(JSON.parse);
  const usage = lines.filter((l) => l.type === "usage" && !l.summary).map((l) => l.tokens.total);
  assert.deepEqual(usage, [3030, 9580, 2530, 2630]);
  assert.equal(lines.filter((l) => l.type === "compacted").length, 1);
  assert.equal(lines.filter((l) => l.type === "context" && (l.text.match(marker) ?? []).length > 0).length, 1);
});

test("without hookd: nothing is thrown, nothing is changed but the log", async () => {
  const cwd = mkdtempSync(join(tmpdir(), "hookd-oc-"));
  const state = mkdtempSync(join(tmpdir(), "hookd-oc-state-"));
  const hooks = await plugin(
    { HOOKD_HOOKCTL: join(cwd, "no-such-hookctl"), HOOKD_STATE_DIR: state },
    cwd,
  );
  const calls = recorded(cwd);
  const before = JSON.stringify(calls.map((c) => c.output));
  await replay(hooks, calls);
  assert.equal(JSON.stringify(calls.map((c) => c.output)), before);
  assert.equal(readdirSync(join(state, "opencode")).length, 1);
  // Nor when its state folder cannot be written.
  const blocked = join(cwd, "file");
  writeFileSync(blocked, "");
  const unlogged = await plugin(
    { HOOKD_HOOKCTL: join(cwd, "no-such-hookctl"), HOOKD_STATE_DIR: blocked },
    cwd,
  );
  await replay(unlogged, recorded(cwd));
});

test("a hookctl that hangs costs hookd's budget and a second, then is killed", async () => {
  const cwd = mkdtempSync(join(tmpdir(), "hookd-oc-"));
  const hang = join(cwd, "hang");
  const pids = join(cwd, "pids");
  writeFileSync(hang, `#!/bin/sh\necho $$ >> ${pids}\nexec sleep 60\n`);
  chmodSync(hang, 0o755);
  const hooks = await plugin(
    { HOOKD_HOOKCTL: hang, HOOKD_STATE_DIR: join(cwd, "state") },
    cwd,
  );
  const call = recorded(cwd).find((c) => c.hook === "tool.execute.after");
  const output = structuredClone(call.output);
  const started = Date.now();
  await hooks["tool.execute.after"](call.input, output);
  const took = Date.now() - started;
  assert.ok(took >= 1900 && took < 3500, `took ${took} ms`);
  assert.deepEqual(output, call.output);
  const [pid] = readFileSync(pids, "utf8").trim().split("\n").map(Number);
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  // Killed at once; gone once Node has reaped it.
  for (let i = 0; i < 50 && alive(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(!alive(), "the hung hookctl was killed");
});
