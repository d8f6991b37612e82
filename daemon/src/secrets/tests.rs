use super::*;

// Fake keys of the common kinds, made up for these tests.
const AWS_ACCESS_KEY: &str = "AKIAQYLPMN5HHHFPZAM2";
const AWS_SECRET: &str = "Zx9qR2vLm8TnWp4Kc7YhJd3Fs6Gb1Na5Ue0Io2Pq";
const GITHUB_TOKEN: &str = "ghp_R8mQ2xK7vN4pL9sT3wY6zB1cD5fG0hJ2kM4n";
const SLACK_TOKEN: &str = "xoxb-2384657102-5839201746-Qf7rT2mK9pLx4WnB8vYc3Hd6";
const PASSWORD: &str = "v9Kq2mXr7LpT4wZn";

fn pem_key() -> String {
    format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----\n",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
        "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"
    )
}

/// The id of the first rule `bytes` match, the rules for some file names
/// left out.
fn secret_in(bytes: &[u8]) -> Option<&'static str> {
    RULES.first(bytes, None)
}

#[test]
fn every_rule_of_the_file_compiles() {
    let set = &*RULES;
    assert!(set.refused.is_empty(), "{:?}", set.refused);
    assert!(set.len() >= 200, "{} rules", set.len());
}

#[test]
fn the_common_kinds_of_key_are_found_and_redacted() {
    let cases = [
        (
            format!("export AWS_ACCESS_KEY_ID={AWS_ACCESS_KEY}"),
            "aws-access-token",
        ),
        (
            format!("aws_secret_access_key = \"{AWS_SECRET}\""),
            "generic-api-key",
        ),
        (
            format!("git remote add o https://{GITHUB_TOKEN}@github.com/x/y"),
            "github-pat",
        ),
        (format!("SLACK_BOT = '{SLACK_TOKEN}'"), "slack-bot-token"),
        (pem_key(), "private-key"),
        (format!("password = \"{PASSWORD}\""), "generic-api-key"),
    ];
    for (text, rule) in &cases {
        assert_eq!(secret_in(text.as_bytes()), Some(*rule), "{text}");
        let redacted = redact(text);
        assert!(
            redacted.contains(&format!("[redacted: {rule}]")),
            "{redacted}"
        );
        for key in [
            AWS_ACCESS_KEY,
            AWS_SECRET,
            GITHUB_TOKEN,
            SLACK_TOKEN,
            PASSWORD,
            "MIIEowIBAAKCAQEA",
        ] {
            assert!(!redacted.contains(key), "{key} left in {redacted}");
        }
    }
    // Only the secret goes: what names it stays.
    assert_eq!(
        redact(&format!("password = \"{PASSWORD}\" # the CI's")),
        "password = \"[redacted: generic-api-key]\" # the CI's"
    );
}

#[test]
fn words_that_are_not_secrets_are_left_alone() {
    let texts = [
        "The key to this design is a small cache keyed by path.",
        "token budget: 12000 tokens left of 200000",
        "api_version = \"2024-01-01\"",
        "password = \"${DB_PASSWORD}\"",
        "Fix the secret_name lookup in config.rs; the auth middleware retries.",
        "commit 3f2a9c1e7b4d5a6f8e9d0c1b2a3f4e5d6c7b8a9f (HEAD -> main)",
        "Rename `access_token` to `session_token` in src/auth.rs",
    ];
    for text in texts {
        assert_eq!(secret_in(text.as_bytes()), None, "{text}");
        assert!(matches!(redact(text), Cow::Borrowed(_)), "{text}");
    }
}

#[test]
fn redaction_keeps_text_around_multibyte_characters_whole() {
    let text = format!("clé → {GITHUB_TOKEN} ✓ fin");
    let redacted = redact(&text);
    assert_eq!(redacted, "clé → [redacted: github-pat] ✓ fin");
}

#[test]
fn secret_files_are_known_by_name() {
    for path in [
        ".env",
        "app/.env.production",
        "id_rsa",
        "home/.ssh/id_ed25519",
        "config/prod.pem",
        "certs/server.key",
        "store.p12",
        ".aws/credentials",
        "deploy/credentials.json",
        ".netrc",
        "terraform.tfstate",
    ] {
        assert!(is_secret_file(path), "{path}");
    }
    for path in [
        "src/env.rs",
        "environment.md",
        "id_rsa.pub",
        "keys.rs",
        "src/key.rs.bak",
        "docs/credentials.md",
        "README.md",
    ] {
        assert!(!is_secret_file(path), "{path}");
    }
}

#[test]
fn rules_for_some_file_names_apply_to_those_only() {
    let tf = "administrator_login_password = \"Xk29vLq7Tz\"\n";
    assert_eq!(secret_in(tf.as_bytes()), None);
    assert_eq!(
        secret_in_file("infra/main.tf", tf.as_bytes()),
        Some("hashicorp-tf-password")
    );
}

#[test]
fn private_spans_are_stripped() {
    assert_eq!(strip_private("no tags"), "no tags");
    assert!(matches!(strip_private("no tags"), Cow::Borrowed(_)));
    assert_eq!(
        strip_private("fix it <private>my pin is 1234</private> now"),
        "fix it  now"
    );
    assert_eq!(
        strip_private("a<PRIVATE>x</Private>b<private>y\nz</private>c"),
        "abc"
    );
    assert_eq!(strip_private("keep <private>all of the rest"), "keep ");
    assert_eq!(strip_private("é<private>ü</private>ß"), "éß");
}

/// Figures for a 100 KB text and a 1 MB file:
/// `cargo test -p hookd secrets::tests::cost -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn cost_of_redaction_and_scanning() {
    let started = std::time::Instant::now();
    let set = RuleSet::load(include_str!("gitleaks.toml"));
    println!("{} rules compiled in {:?}", set.len(), started.elapsed());
    let _ = &*RULES;
    let paragraph = "The agent read src/auth.rs and changed the token refresh; the key \
        store keeps 12 entries, api calls retry 3 times. password policy unchanged.\n";
    let mut text = String::new();
    while text.len() < 100_000 {
        text.push_str(paragraph);
    }
    text.push_str(&format!("aws_secret_access_key = \"{AWS_SECRET}\"\n"));
    let started = std::time::Instant::now();
    let runs = 10;
    for _ in 0..runs {
        assert!(redact(&text).contains("[redacted"));
    }
    println!(
        "redact, {} KB of text: {:?} each",
        text.len() / 1000,
        started.elapsed() / runs
    );
    let code = "fn main() { let key = map.get(&id); println!(\"{}\", token_count + 1); }\n";
    let mut file = String::new();
    while file.len() < 1_000_000 {
        file.push_str(code);
    }
    let started = std::time::Instant::now();
    for _ in 0..runs {
        assert_eq!(secret_in(file.as_bytes()), None);
    }
    println!(
        "secret_in, {} KB file: {:?} each",
        file.len() / 1000,
        started.elapsed() / runs
    );
}
