//! What counts as a secret: the one place that says so, for everything that
//! may leave the machine (synced state, prompts, lessons, checkpoint trees).
//!
//! The content rules are gitleaks' own rule set, `gitleaks.toml` beside this
//! file: gitleaks v8.30.1 (commit 83d9cd684c87d95d656c1458ef04895a7f1cbd8e,
//! `config/gitleaks.toml`), MIT-licensed (`LICENSE.gitleaks`). It is data, not
//! code: to take a newer release, replace the file and run this module's
//! tests. It is compiled once per daemon, on first use, with the `regex`
//! crate; each rule's keywords are found first, in one pass over the text,
//! and only the rules whose keywords occur run their pattern.
//!
//! File names are hookd's own short list (`.env`, keys, credentials) plus
//! gitleaks' rules that match a path alone.

mod rules;

use std::borrow::Cow;
use std::sync::LazyLock;

pub use rules::RuleSet;

static RULES: LazyLock<RuleSet> = LazyLock::new(|| {
    let set = RuleSet::load(include_str!("gitleaks.toml"));
    for (id, why) in &set.refused {
        tracing::warn!(rule = %id, %why, "a secret rule was left out: its pattern does not compile here");
    }
    set
});

/// `text` with every secret replaced by `[redacted: <rule id>]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let found = RULES.find_all(text.as_bytes(), None);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for hit in found {
        // A pattern over bytes may start or end inside a character: take it whole.
        let mut start = hit.start.max(at);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = hit.end;
        while !text.is_char_boundary(end) {
            end += 1;
        }
        if end <= at {
            continue;
        }
        start = start.max(at);
        out.push_str(&text[at..start]);
        out.push_str("[redacted: ");
        out.push_str(hit.rule);
        out.push(']');
        at = end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The id of the first rule the content of the file at `path` (relative,
/// `/`-separated) matches, the rules for some file names included.
pub fn secret_in_file(path: &str, bytes: &[u8]) -> Option<&'static str> {
    RULES.first(bytes, Some(path))
}

/// Whether a file's name alone says it holds secrets: `.env`, `.env.*`,
/// private keys, credentials files, and the like. `path` is relative,
/// `/`-separated.
pub fn is_secret_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    let parent = path
        .rsplit('/')
        .nth(1)
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    lower == ".env"
        || lower.starts_with(".env.")
        || lower == ".envrc"
        || SECRET_NAMES.contains(&lower.as_str())
        || SECRET_EXTENSIONS
            .iter()
            .any(|ext| lower.len() > ext.len() && lower.ends_with(ext))
        || (parent == ".aws" && (lower == "credentials" || lower == "config"))
        || (parent == ".ssh"
            && !lower.ends_with(".pub")
            && lower != "known_hosts"
            && lower != "config")
        || RULES.matches_path_rule(path)
}

/// Whole file names that hold secrets wherever they are.
const SECRET_NAMES: &[&str] = &[
    "credentials",
    "credentials.json",
    "client_secret.json",
    "service-account.json",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".dockercfg",
    "secrets.yml",
    "secrets.yaml",
    "secrets.json",
    "secrets.toml",
    "terraform.tfstate",
    "terraform.tfstate.backup",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
];

/// Endings of key, certificate store and credential files.
const SECRET_EXTENSIONS: &[&str] = &[
    ".pem",
    ".key",
    ".p12",
    ".pfx",
    ".jks",
    ".keystore",
    ".ppk",
    ".p8",
    ".kdbx",
    ".tfvars",
    ".tfstate",
    ".gpg",
    ".age",
];

/// `text` without its `<private>…</private>` spans (tags in any case). An
/// unclosed `<private>` hides everything after it: a person who opened one
/// meant the rest too.
pub fn strip_private(text: &str) -> Cow<'_, str> {
    const OPEN: &str = "<private>";
    const CLOSE: &str = "</private>";
    let Some(first) = find_ascii_ci(text, OPEN, 0) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut open = Some(first);
    while let Some(start) = open {
        out.push_str(&text[at..start]);
        match find_ascii_ci(text, CLOSE, start + OPEN.len()) {
            Some(end) => at = end + CLOSE.len(),
            None => {
                at = text.len();
                break;
            }
        }
        open = find_ascii_ci(text, OPEN, at);
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// Where `needle` (ASCII) occurs in `text` from byte `from`, ignoring case.
fn find_ascii_ci(text: &str, needle: &str, from: usize) -> Option<usize> {
    let hay = text.as_bytes();
    let needle = needle.as_bytes();
    (from..=hay.len().checked_sub(needle.len())?)
        .find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests;
