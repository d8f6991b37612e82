//! In-process benchmarks of what every hook costs the daemon: reading the
//! session's transcript (new session, appended turn, nothing new) and a hook
//! round trip, over the socket and straight into the engine.
//!
//! `cargo bench -p hookd --bench hot_path`. The whole-process figures
//! (hookctl start-up included, against `/bin/true`) come from `hookd-bench`
//! (see CONTRIBUTING.md).

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use hookd::harness::Cursor;
use hookd::harness::claude_code::transcript;
use hookd::{Daemon, DaemonOptions};
use protocol::frame;
use protocol::paths::{SocketPath, SocketSource};
use protocol::wire::{Harness, Hello, HookRequest, Request, Response};
use serde_json::value::RawValue;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::Path;

#[allow(dead_code)]
#[path = "../../tests/bench/inputs.rs"]
mod inputs;

const MB: u64 = 1024 * 1024;

fn transcripts(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("transcript");
    for mb in [1, 64] {
        let path = dir.path().join(format!("t{mb}.jsonl"));
        let (made, _) = inputs::transcript(&path, "s", dir.path(), mb * MB, mb).unwrap();
        group.bench_function(format!("new session, {mb} MB"), |b| {
            b.iter(|| {
                let reading = transcript::read(&path, None, None).unwrap();
                assert_eq!(reading.usage.map(|u| u.tokens), Some(made.tokens));
            })
        });
    }

    let path = dir.path().join("growing.jsonl");
    let (_, mut writer) = inputs::transcript(&path, "s", dir.path(), MB, 7).unwrap();
    let (dev, ino) = {
        let meta = std::fs::metadata(&path).unwrap();
        (meta.dev(), meta.ino())
    };
    group.bench_function("one appended turn", |b| {
        b.iter_batched(
            || {
                let offset = std::fs::metadata(&path).unwrap().len();
                inputs::append_turn(&path, &mut writer).unwrap();
                Cursor { offset, dev, ino }
            },
            |cursor| transcript::read(&path, Some(&cursor), None).unwrap(),
            BatchSize::SmallInput,
        )
    });
    let at_end = transcript::read(&path, None, None).unwrap();
    group.bench_function("nothing new", |b| {
        b.iter(|| transcript::read(&path, Some(&at_end.cursor), at_end.usage.as_ref()).unwrap())
    });
    group.finish();
}

/// A Codex rollout whose latest turn is long: `calls` tool calls, each a
/// reply's figures and a tool's output of about 2 KiB.
fn codex_rollout(path: &Path, calls: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(
        f,
        r#"{{"type":"turn_context","payload":{{"model":"gpt-5.5-codex"}}}}"#
    )
    .unwrap();
    writeln!(
        f,
        r#"{{"type":"event_msg","payload":{{"type":"task_started"}}}}"#
    )
    .unwrap();
    for n in 0..calls {
        codex_reply(&mut f, 10_000 + n * 10);
    }
}

fn codex_reply(f: &mut impl Write, tokens: u64) {
    let usage = format!(
        r#"{{"input_tokens":{},"cached_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":0,"total_tokens":{tokens}}}"#,
        tokens - 50
    );
    writeln!(f, r#"{{"type":"response_item","payload":{{"type":"function_call","name":"exec_command","arguments":"{{\"cmd\":\"cargo test\"}}","call_id":"c{tokens}"}}}}"#).unwrap();
    writeln!(
        f,
        r#"{{"type":"token_usage_record","payload":{{"response_id":"r{tokens}","usage":{usage}}}}}"#
    )
    .unwrap();
    writeln!(f, r#"{{"type":"response_item","payload":{{"type":"function_call_output","call_id":"c{tokens}","output":"{}"}}}}"#, "x".repeat(2_000)).unwrap();
    writeln!(f, r#"{{"type":"event_msg","payload":{{"type":"token_count","info":{{"last_token_usage":{usage},"model_context_window":190000}}}}}}"#).unwrap();
}

/// A Codex rollout reading after one more reply, against reading the same
/// file from its end (what every reading cost when it scanned back to the
/// turn's start), in the same run.
fn rollouts(c: &mut Criterion) {
    let codex = hookd::harness::adapter(Harness::Codex);
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("codex rollout");
    let path = dir.path().join("rollout.jsonl");
    codex_rollout(&path, 4_000);
    let mut tokens = 60_000;
    group.bench_function("from the end, an 8 MB turn", |b| {
        b.iter(|| codex.read_session_file(&path, None, None).unwrap())
    });
    group.bench_function("one appended reply, an 8 MB turn", |b| {
        b.iter_batched(
            || {
                let at = codex.read_session_file(&path, None, None).unwrap().reading;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                tokens += 10;
                codex_reply(&mut f, tokens);
                at
            },
            |at| {
                codex
                    .read_session_file(&path, Some(&at.cursor), at.usage.as_ref())
                    .unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn hook_frames(payload: &[u8]) -> (Vec<u8>, Box<RawValue>) {
    let raw = RawValue::from_string(String::from_utf8(payload.to_vec()).unwrap()).unwrap();
    let request = Request::Hook(HookRequest {
        harness: Harness::ClaudeCode,
        event: Some("post-tool-use".into()),
        payload: raw.clone(),
        env: Default::default(),
        cwd: None,
    });
    let mut frames = frame::encode(&Hello::current()).unwrap();
    frames.extend(frame::encode(&request).unwrap());
    (frames, raw)
}

/// What hookctl does once started: connect, Hello and request, both answers.
fn send(socket: &Path, frames: &[u8]) {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.write_all(frames).unwrap();
    assert!(matches!(
        frame::read_message::<_, Response>(&mut stream).unwrap(),
        Response::Hello(_)
    ));
    assert!(matches!(
        frame::read_message::<_, Response>(&mut stream).unwrap(),
        Response::Hook(_)
    ));
}

fn hooks(c: &mut Criterion) {
    // Short: Unix socket paths are limited to about 107 bytes.
    let dir = tempfile::Builder::new()
        .prefix("hkb")
        .tempdir_in("/tmp")
        .unwrap();
    let socket = dir.path().join("hookd.sock");
    let options = DaemonOptions::new(
        SocketPath {
            path: socket.clone(),
            source: SocketSource::Flag,
        },
        dir.path().join("state"),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let daemon = runtime.block_on(async { Daemon::bind(options).unwrap() });
    let engine = daemon.engine().clone();
    let shutdown = daemon.shutdown_handle();
    let served = runtime.spawn(daemon.serve());

    let project = dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let transcript = dir.path().join("s.jsonl");
    let (_, mut writer) = inputs::transcript(&transcript, "s", &project, MB, 3).unwrap();
    let mut rng = inputs::Rng::new(5);
    let output = inputs::tool_output(&mut rng, 0);
    let payload = inputs::hook_payload("PostToolUse", "bench-s", &transcript, &project, &output);
    let (frames, raw) = hook_frames(&payload);
    send(&socket, &frames);

    let mut group = c.benchmark_group("hook");
    group.bench_function("over the socket, transcript unchanged", |b| {
        b.iter(|| send(&socket, &frames))
    });
    group.bench_function("over the socket, one turn appended", |b| {
        b.iter_batched(
            || inputs::append_turn(&transcript, &mut writer).unwrap(),
            |()| send(&socket, &frames),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("in the engine, no socket", |b| {
        b.iter_batched(
            || {
                Request::Hook(HookRequest {
                    harness: Harness::ClaudeCode,
                    event: Some("post-tool-use".into()),
                    payload: raw.clone(),
                    env: Default::default(),
                    cwd: None,
                })
            },
            |request| {
                let response = runtime.block_on(engine.handle(request, None));
                assert!(matches!(response, Response::Hook(_)));
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
    shutdown.trigger("bench done");
    runtime.block_on(served).unwrap().unwrap();
}

criterion_group!(benches, transcripts, rollouts, hooks);
criterion_main!(benches);
