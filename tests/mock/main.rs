//! `hookd-mock-model`: the scripted Codex / Gemini / Chat Completions model server of the
//! end-to-end scenarios (see `hookd_tests::mock_model`). A binary because it
//! runs inside the scenario's loopback-only network namespace.

fn main() {
    std::process::exit(hookd_tests::mock_model::main());
}
