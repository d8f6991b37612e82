// hookd's plugin for OpenCode: what `hookctl install opencode` writes to
// ~/.config/opencode/plugins/hookd.js (or <project>/.opencode/plugins/).
//
// How it talks to hookd: one `hookctl hook --harness opencode <event>` per
// event that needs an answer (a session's start, a prompt, a finished tool
// call, a compaction, a turn's end), with the payload on stdin. That is the
// process per tool call every other harness spends; it reuses hookctl's
// socket handshake, daemon autostart, budgets and fail-open rules instead
// of a second copy of them here. The events that come by the dozen
// (message.updated while a reply streams, chat.params before each request)
// spawn nothing: the plugin appends OpenCode's own figures to its log,
// <hookd state>/opencode/<session>.jsonl, which hookd watches and reads as
// this session's file.
//
// OpenCode awaits a plugin's hooks without a time limit, so every call
// here has its own deadline (hookd's budget and a second for the process),
// after which hookctl is killed and OpenCode carries on as if hookd were
// not there. Nothing here throws into OpenCode, blocks a tool or prints.

import { spawn } from "node:child_process";
import { appendFileSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

// The hookctl that hooks run; `hookctl install` puts its full path here.
const HOOKCTL = "hookctl";
// The version of the payloads and log lines, as hookd reads them.
const VERSION = 1;
// hookd's budgets (ms), as in its configuration's defaults.
const BUDGET_MS = { "session-start": 10000, "pre-compact": 30000 };
const HOOK_BUDGET_MS = 1000;
// What the process itself may take beyond hookd's budget.
const GRACE_MS = 1000;
// The most a hookctl answer may hold (hookd's answers stay far below it).
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

function stateDir(env) {
  if (env.HOOKD_STATE_DIR) return env.HOOKD_STATE_DIR;
  const base = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
  return join(base, "hookd");
}

// A session id as a file name: OpenCode's ids are `ses_` and letters.
function logName(sessionID) {
  return String(sessionID).replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 200) + ".jsonl";
}

// Runs `hookctl hook --harness opencode <event>` with `payload`; resolves
// to its parsed answer, or null when there is none in time.
function ask(event, payload, env) {
  const budget = (BUDGET_MS[event] ?? HOOK_BUDGET_MS) + GRACE_MS;
  const program = env.HOOKD_HOOKCTL || HOOKCTL;
  return new Promise((resolve) => {
    let done = false;
    const chunks = [];
    let size = 0;
    let child;
    const finish = (answer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try {
        child?.kill("SIGKILL");
      } catch {}
      resolve(answer);
    };
    const timer = setTimeout(() => finish(null), budget);
    try {
      child = spawn(program, ["hook", "--harness", "opencode", event], {
        stdio: ["pipe", "pipe", "ignore"],
        env,
      });
      child.on("error", () => finish(null));
      child.stdin.on("error", () => {});
      child.stdout.on("data", (chunk) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) return finish(null);
        chunks.push(chunk);
      });
      child.on("close", () => {
        try {
          const text = Buffer.concat(chunks).toString("utf8").trim();
          finish(text ? JSON.parse(text) : {});
        } catch {
          finish(null);
        }
      });
      child.stdin.end(JSON.stringify({ v: VERSION, ...payload }));
    } catch {
      finish(null);
    }
  });
}

// An OpenCode switch as OpenCode reads one: on only as `true` or `1`.
function flagOn(value) {
  return /^(true|1)$/i.test(value ?? "");
}

// The text for the model in an answer, if any.
function contextOf(answer) {
  return answer && typeof answer.context === "string" && answer.context ? answer.context : null;
}

function textOf(parts) {
  return (Array.isArray(parts) ? parts : [])
    .filter((p) => p && p.type === "text" && typeof p.text === "string" && !p.synthetic)
    .map((p) => p.text)
    .join("\n");
}

export const HookdPlugin = async (ctx) => {
  const env = { ...process.env };
  const directory = ctx?.directory || process.cwd();
  const logDir = join(stateDir(env), "opencode");
  // Sessions that are a subagent's (OpenCode's task tool): not followed.
  const children = new Set();
  // Sessions whose first request after a compaction is still to come.
  const resumeDue = new Set();
  // A session's start, asked when OpenCode makes it: its words for the
  // model go in with the person's first prompt.
  const starting = new Map();
  const logged = new Set();
  const lastModel = new Map();
  const compactionAuto = new Map();
  // The size of each session's latest compaction summary, as OpenCode
  // counted its reply.
  const summaryTokens = new Map();
  // The compaction's summary as it is written, by session, and the
  // messages that are summaries.
  const summaryText = new Map();
  const summaries = new Set();
  const argsOf = new Map();
  let compaction = {};

  const logPath = (sessionID) => join(logDir, logName(sessionID));
  const log = (sessionID, line) => {
    try {
      mkdirSync(logDir, { recursive: true, mode: 0o700 });
      appendFileSync(logPath(sessionID), JSON.stringify({ v: VERSION, ...line }) + "\n", {
        mode: 0o600,
      });
    } catch {}
  };
  const payload = (sessionID, more) => ({
    session_id: sessionID,
    cwd: directory,
    transcript_path: logPath(sessionID),
    ...more,
  });
  const send = async (event, sessionID, more) => {
    if (!sessionID || children.has(sessionID)) return null;
    return ask(event, payload(sessionID, more), env);
  };
  // SessionStart(compact) at the first request after a compaction: its
  // answer is the resume prompt.
  const resumeWords = async (sessionID) => {
    if (!resumeDue.delete(sessionID)) return null;
    return contextOf(await send("session-start", sessionID, { source: "compact" }));
  };
  const textPart = (output, text) => {
    const like = (Array.isArray(output.parts) && output.parts[0]) || {};
    return {
      id: (like.id || "prt_hookd") + "_hookd",
      sessionID: like.sessionID ?? output.message?.sessionID,
      messageID: like.messageID ?? output.message?.id,
      type: "text",
      text,
      synthetic: true,
    };
  };

  const onEvent = async (event) => {
    const props = event?.properties ?? {};
    switch (event?.type) {
      case "session.created": {
        const info = props.info ?? {};
        if (info.parentID) {
          children.add(info.id);
          return;
        }
        const start = send("session-start", info.id, { source: "startup" });
        starting.set(info.id, start);
        await start;
        return;
      }
      case "message.updated": {
        const info = props.info ?? {};
        // Its tokens are set once, when the step ends (the message itself
        // completes later, after its tools).
        const tokens = info.tokens;
        if (info.role === "assistant" && info.summary === true) summaries.add(info.id);
        if (info.role !== "assistant" || !tokens || !(tokens.total || tokens.input)) return;
        const seen = `${info.id} ${tokens.total} ${tokens.input} ${tokens.output}`;
        if (children.has(info.sessionID) || logged.has(seen)) return;
        logged.add(seen);
        if (info.summary === true) summaryTokens.set(info.sessionID, tokens.output);
        log(info.sessionID, {
          type: "usage",
          id: info.id,
          model: [info.providerID, info.modelID].filter(Boolean).join("/"),
          tokens: info.tokens,
          summary: info.summary === true,
        });
        return;
      }
      case "message.part.updated": {
        const part = props.part ?? {};
        if (part.type === "compaction") compactionAuto.set(part.sessionID, part.auto !== false);
        if (part.type === "text" && summaries.has(part.messageID) && typeof part.text === "string")
          summaryText.set(part.sessionID, part.text);
        return;
      }
      case "session.compacted": {
        const sessionID = props.sessionID;
        if (!sessionID || children.has(sessionID)) return;
        log(sessionID, {
          type: "compacted",
          auto: compactionAuto.get(sessionID) ?? true,
          summary_tokens: summaryTokens.get(sessionID) ?? null,
          summary: summaryText.get(sessionID) ?? null,
        });
        summaryText.delete(sessionID);
        resumeDue.add(sessionID);
        return;
      }
      case "session.idle":
        // A long-lived OpenCode (its TUI, `serve`) runs many turns: the
        // replies already logged need not be kept past one (a repeat would
        // only log the same figure again).
        logged.clear();
        await send("stop", props.sessionID, {});
        return;
    }
  };

  // Each hook swallows every error: OpenCode must never see one of ours.
  const guarded =
    (hook) =>
    async (...args) => {
      try {
        await hook(...args);
      } catch {}
    };

  return {
    config: guarded(async (config) => {
      compaction = config?.compaction ?? {};
    }),
    event: guarded(async ({ event }) => onEvent(event)),
    "chat.params": guarded(async (input) => {
      const model = input?.model;
      const sessionID = input?.sessionID;
      if (!model?.limit || !sessionID || children.has(sessionID)) return;
      const line = {
        type: "model",
        model: [model.providerID, model.id].filter(Boolean).join("/"),
        limit: model.limit,
        reserved: compaction.reserved ?? null,
        auto: compaction.auto !== false && !flagOn(env.OPENCODE_DISABLE_AUTOCOMPACT),
      };
      const key = JSON.stringify(line);
      if (lastModel.get(sessionID) === key) return;
      lastModel.set(sessionID, key);
      log(sessionID, line);
    }),
    "chat.message": guarded(async (input, output) => {
      const sessionID = input?.sessionID;
      if (!sessionID || children.has(sessionID)) return;
      const prompt = textOf(output?.parts);
      log(sessionID, { type: "prompt", text: prompt });
      const start = starting.get(sessionID);
      starting.delete(sessionID);
      const words = [contextOf(await start), await resumeWords(sessionID)];
      words.push(contextOf(await send("user-prompt-submit", sessionID, { prompt })));
      const text = words.filter(Boolean).join("\n\n");
      if (text && Array.isArray(output?.parts)) {
        output.parts.push(textPart(output, text));
        log(sessionID, { type: "context", where: "prompt", text });
      }
    }),
    "experimental.chat.system.transform": guarded(async (input, output) => {
      const sessionID = input?.sessionID;
      if (!sessionID || children.has(sessionID) || !Array.isArray(output?.system)) return;
      // The title of a new session is asked for with its own system prompt,
      // beside the agent's first request: not the agent's context.
      if (String(output.system[0] ?? "").startsWith("You are a title generator")) return;
      const text = await resumeWords(sessionID);
      if (!text) return;
      output.system.push(text);
      log(sessionID, { type: "context", where: "system", text });
    }),
    "tool.execute.before": guarded(async (input, output) => {
      if (input?.callID && !children.has(input.sessionID)) argsOf.set(input.callID, output?.args);
    }),
    "tool.execute.after": guarded(async (input, output) => {
      const sessionID = input?.sessionID;
      if (!sessionID || children.has(sessionID)) return;
      const args = input.args ?? argsOf.get(input.callID) ?? {};
      argsOf.delete(input.callID);
      const exit = output?.metadata?.exit;
      log(sessionID, {
        type: "tool",
        id: input.callID,
        tool: input.tool,
        args,
        error: typeof exit === "number" && exit !== 0 ? `exit ${exit}` : null,
      });
      const text = contextOf(await send("post-tool-use", sessionID, { tool_name: input.tool }));
      if (text && typeof output?.output === "string") {
        output.output += "\n\n" + text;
        log(sessionID, { type: "context", where: "tool", text });
      }
    }),
    "experimental.session.compacting": guarded(async (input, output) => {
      const sessionID = input?.sessionID;
      const auto = compactionAuto.get(sessionID) ?? true;
      const answer = await send("pre-compact", sessionID, { trigger: auto ? "auto" : "manual" });
      const text = contextOf(answer);
      if (text && Array.isArray(output?.context)) output.context.push(text);
    }),
  };
};
