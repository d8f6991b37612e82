//! Integration tests: the real daemon (in-process or as the real binary) on a
//! temporary socket, driven through the real hookctl.

mod attacks;
mod attacks_blocking;
mod attacks_blocking_git;
mod attacks_bounds;
mod attacks_memory;
mod attacks_states;
mod attacks_text;
mod budget;
mod client_failures;
mod closed_pipe;
mod codex_point_safety;
mod config;
mod gemini_point_safety;
mod git_edges;
mod git_trust;
mod harnesses;
mod hooks;
mod install;
mod lifecycle;
mod memory;
mod monitor;
mod nothing_left_behind;
mod opencode;
mod pipeline;
mod qwen_code;
mod reliability;
mod resume;
mod resume_followed;
mod resume_frontier;
mod resume_paths;
mod snapshots;
mod test_command;
mod untrusted;
mod wire;
