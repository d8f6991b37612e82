//! gitleaks' rule file, read and compiled: its rules (pattern, secret group,
//! entropy floor, keywords, the file names some apply to), their allowlists
//! and the global one, with gitleaks' meaning for each.

use aho_corasick::AhoCorasick;
use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;

/// One secret found: where it is in the text, and the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    pub rule: &'static str,
}

/// Every rule, compiled, and the keyword prefilter.
pub struct RuleSet {
    rules: Vec<Rule>,
    /// The rules that only name files (`pkcs12-file`).
    path_rules: Vec<Regex>,
    keywords: AhoCorasick,
    /// For each keyword, the rules that list it.
    keyword_rules: Vec<Vec<usize>>,
    /// Rules with no keyword: they always run.
    always: Vec<usize>,
    global: Allowlist,
    /// Rules whose pattern did not compile, and why.
    pub refused: Vec<(String, String)>,
}

struct Rule {
    id: String,
    regex: Regex,
    secret_group: usize,
    entropy: Option<f64>,
    path: Option<Regex>,
    allowlists: Vec<Allowlist>,
}

#[derive(Default)]
struct Allowlist {
    target: Target,
    regexes: Vec<Regex>,
    stopwords: Vec<String>,
    paths: Vec<Regex>,
    /// `condition = "AND"`: every criterion it sets must hold.
    all: bool,
}

#[derive(Default, Clone, Copy)]
enum Target {
    #[default]
    Secret,
    Match,
    Line,
}

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    allowlist: Option<AllowlistEntry>,
    #[serde(default)]
    rules: Vec<RuleEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleEntry {
    id: String,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    secret_group: Option<usize>,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    allowlists: Vec<AllowlistEntry>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AllowlistEntry {
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    condition: Option<String>,
}

/// gitleaks' patterns are Go's RE2: `\w`, `\s`, `\b` and `(?i)` are ASCII
/// there, and so they are here (which also keeps the automata small).
fn compile(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(&go_braces(pattern))
        .unicode(false)
        .size_limit(64 << 20)
        .dfa_size_limit(16 << 20)
        .build()
        .map_err(|e| e.to_string())
}

/// Go takes a `{` that opens no repetition (`\${NAME}`) for a literal; the
/// `regex` crate wants it escaped.
fn go_braces(pattern: &str) -> String {
    let bytes = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\\' && i + 1 < bytes.len() {
            out.push_str(&pattern[i..i + 2 + utf8_tail(&bytes[i + 1..])]);
            i += 2 + utf8_tail(&bytes[i + 1..]);
            continue;
        }
        match c {
            b'[' if !in_class => in_class = true,
            b']' if in_class => in_class = false,
            b'{' if !in_class && !opens_repetition(&bytes[i..]) => {
                out.push_str("\\{");
                i += 1;
                continue;
            }
            _ => {}
        }
        let len = 1 + utf8_tail(&bytes[i..]);
        out.push_str(&pattern[i..i + len]);
        i += len;
    }
    out
}

/// Continuation bytes of the character starting `bytes`.
fn utf8_tail(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .skip(1)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count()
}

/// `{n}`, `{n,}` or `{n,m}` at the start of `bytes`.
fn opens_repetition(bytes: &[u8]) -> bool {
    let Some(close) = bytes.iter().position(|&b| b == b'}') else {
        return false;
    };
    let inner = &bytes[1..close];
    let mut parts = inner.splitn(2, |&b| b == b',');
    let first = parts.next().unwrap_or(&[]);
    let digits = |p: &[u8]| p.iter().all(u8::is_ascii_digit);
    !first.is_empty() && digits(first) && parts.next().is_none_or(digits)
}

impl Allowlist {
    fn from_entry(entry: &AllowlistEntry, refused: &mut Vec<String>) -> Allowlist {
        let mut compiled = |patterns: &[String]| {
            patterns
                .iter()
                .filter_map(|p| compile(p).map_err(|e| refused.push(e)).ok())
                .collect()
        };
        Allowlist {
            target: match entry.regex_target.as_deref() {
                Some("match") => Target::Match,
                Some("line") => Target::Line,
                _ => Target::Secret,
            },
            regexes: compiled(&entry.regexes),
            paths: compiled(&entry.paths),
            stopwords: entry
                .stopwords
                .iter()
                .map(|w| w.to_ascii_lowercase())
                .collect(),
            all: entry
                .condition
                .as_deref()
                .is_some_and(|c| c.eq_ignore_ascii_case("and")),
        }
    }

    /// Whether this allowlist lets a finding pass as no secret.
    fn allows(&self, secret: &[u8], whole: &[u8], line: &[u8], path: Option<&str>) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => whole,
            Target::Line => line,
        };
        let mut checks: Vec<bool> = Vec::with_capacity(3);
        if !self.regexes.is_empty() {
            checks.push(self.regexes.iter().any(|r| r.is_match(target)));
        }
        if !self.stopwords.is_empty() {
            let lower = secret.to_ascii_lowercase();
            checks.push(
                self.stopwords
                    .iter()
                    .any(|w| memchr::memmem::find(&lower, w.as_bytes()).is_some()),
            );
        }
        if !self.paths.is_empty() {
            checks.push(path.is_some_and(|p| self.paths.iter().any(|r| r.is_match(p.as_bytes()))));
        }
        if self.all {
            !checks.is_empty() && checks.iter().all(|c| *c)
        } else {
            checks.iter().any(|c| *c)
        }
    }
}

impl RuleSet {
    /// The rules of a gitleaks rule file. A rule whose pattern does not
    /// compile is left out and named in `refused`; a file that does not
    /// parse gives no rules (and says why there).
    pub fn load(toml_text: &str) -> RuleSet {
        let mut refused = Vec::new();
        let file: File = match toml::from_str(toml_text) {
            Ok(file) => file,
            Err(e) => {
                refused.push(("(the rule file)".into(), e.to_string()));
                File {
                    allowlist: None,
                    rules: Vec::new(),
                }
            }
        };
        let mut lost = Vec::new();
        let global = Allowlist::from_entry(&file.allowlist.unwrap_or_default(), &mut lost);
        let mut rules = Vec::new();
        let mut path_rules = Vec::new();
        let mut keywords: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        for entry in file.rules {
            let path = match entry.path.as_deref().map(compile).transpose() {
                Ok(path) => path,
                Err(e) => {
                    refused.push((entry.id, e));
                    continue;
                }
            };
            let Some(pattern) = &entry.regex else {
                path_rules.extend(path);
                continue;
            };
            let regex = match compile(pattern) {
                Ok(regex) => regex,
                Err(e) => {
                    refused.push((entry.id, e));
                    continue;
                }
            };
            let index = rules.len();
            for word in &entry.keywords {
                let word = word.to_ascii_lowercase();
                match keywords.iter().position(|k| *k == word) {
                    Some(at) => keyword_rules[at].push(index),
                    None => {
                        keywords.push(word);
                        keyword_rules.push(vec![index]);
                    }
                }
            }
            if entry.keywords.is_empty() {
                always.push(index);
            }
            let mut lost_here = Vec::new();
            let allowlists = entry
                .allowlists
                .iter()
                .map(|a| Allowlist::from_entry(a, &mut lost_here))
                .collect();
            for why in lost_here {
                refused.push((format!("{} (an allowlist pattern)", entry.id), why));
            }
            rules.push(Rule {
                id: entry.id,
                regex,
                secret_group: entry.secret_group.unwrap_or(0),
                entropy: entry.entropy.filter(|e| *e > 0.0),
                path,
                allowlists,
            });
        }
        for why in lost {
            refused.push(("(the global allowlist)".into(), why));
        }
        let keywords = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&keywords)
            .expect("keywords are plain strings");
        RuleSet {
            rules,
            path_rules,
            keywords,
            keyword_rules,
            always,
            global,
            refused,
        }
    }

    /// How many content rules were compiled.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether a rule that names files alone matches `path`.
    pub fn matches_path_rule(&self, path: &str) -> bool {
        self.path_rules.iter().any(|r| r.is_match(path.as_bytes()))
    }

    /// The rules worth running on `text`: those whose keywords occur in it,
    /// in the file's order.
    fn candidates(&self, text: &[u8]) -> Vec<usize> {
        // Most strings hold no keyword: nothing is allocated for them.
        let mut out = self.always.clone();
        let mut seen: Option<Vec<bool>> = None;
        for m in self.keywords.find_overlapping_iter(text) {
            let seen = seen.get_or_insert_with(|| vec![false; self.keyword_rules.len()]);
            let k = m.pattern().as_usize();
            if !std::mem::replace(&mut seen[k], true) {
                out.extend_from_slice(&self.keyword_rules[k]);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The id of the first rule that finds a secret in `text`.
    pub fn first(&'static self, text: &[u8], path: Option<&str>) -> Option<&'static str> {
        if path.is_some_and(|p| self.global.paths.iter().any(|r| r.is_match(p.as_bytes()))) {
            return None;
        }
        self.candidates(text)
            .into_iter()
            .find(|&r| self.findings_of(r, text, path).next().is_some())
            .map(|r| self.rules[r].id.as_str())
    }

    /// Every secret in `text`, in order, none overlapping another.
    pub fn find_all(&'static self, text: &[u8], path: Option<&str>) -> Vec<Found> {
        let mut found: Vec<Found> = self
            .candidates(text)
            .into_iter()
            .flat_map(|r| self.findings_of(r, text, path))
            .collect();
        found.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
        let mut kept: Vec<Found> = Vec::with_capacity(found.len());
        for f in found {
            match kept.last_mut() {
                Some(last) if f.start < last.end => last.end = last.end.max(f.end),
                _ => kept.push(f),
            }
        }
        kept
    }

    /// The secrets rule `r` finds in `text`, lazily.
    fn findings_of<'t>(
        &'static self,
        r: usize,
        text: &'t [u8],
        path: Option<&'t str>,
    ) -> impl Iterator<Item = Found> + 't {
        let rule = &self.rules[r];
        let applies = match (&rule.path, path) {
            (None, _) => true,
            (Some(only), Some(p)) => only.is_match(p.as_bytes()),
            (Some(_), None) => false,
        };
        applies
            .then(|| rule.regex.captures_iter(text))
            .into_iter()
            .flatten()
            .filter_map(move |caps| {
                let whole = caps.get(0)?;
                let secret = if rule.secret_group > 0 {
                    caps.get(rule.secret_group)?
                } else {
                    (1..caps.len())
                        .filter_map(|g| caps.get(g))
                        .find(|m| !m.is_empty())
                        .unwrap_or(whole)
                };
                self.is_secret(rule, secret.as_bytes(), whole, text, path)
                    .then(|| Found {
                        start: secret.start(),
                        end: secret.end(),
                        rule: rule.id.as_str(),
                    })
            })
    }

    /// gitleaks' tests of a match: the entropy floor (and a digit, for the
    /// generic rules), then the rule's allowlists and the global one.
    fn is_secret(
        &self,
        rule: &Rule,
        secret: &[u8],
        whole: regex::bytes::Match<'_>,
        text: &[u8],
        path: Option<&str>,
    ) -> bool {
        if let Some(floor) = rule.entropy {
            if shannon_entropy(secret) <= floor {
                return false;
            }
            if rule.id.starts_with("generic") && !secret.iter().any(u8::is_ascii_digit) {
                return false;
            }
        }
        let line_start = memchr::memrchr(b'\n', &text[..whole.start()]).map_or(0, |i| i + 1);
        let line_end =
            memchr::memchr(b'\n', &text[whole.end()..]).map_or(text.len(), |i| whole.end() + i);
        let line = &text[line_start..line_end];
        let allowed = |a: &Allowlist| a.allows(secret, whole.as_bytes(), line, path);
        !(rule.allowlists.iter().any(allowed) || allowed(&self.global))
    }
}

/// Shannon entropy of a byte string, in bits per byte.
fn shannon_entropy(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0usize; 256];
    for &b in bytes {
        counts[b as usize] += 1;
    }
    let len = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / len;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_literal_braces_are_escaped_and_repetitions_kept() {
        assert_eq!(go_braces(r"^\${(?:[A-Z_]+)}$"), r"^\$\{(?:[A-Z_]+)}$");
        assert_eq!(go_braces(r"a{2,3}b{4}c{5,}"), r"a{2,3}b{4}c{5,}");
        assert_eq!(go_braces(r"[{]x\{"), r"[{]x\{");
        assert!(compile(r"^\{\{[ \t]*[\w ().|]+[ \t]*}}$").is_ok());
    }

    #[test]
    fn entropy_is_bits_per_byte() {
        assert_eq!(shannon_entropy(b"aaaa"), 0.0);
        assert!((shannon_entropy(b"abcd") - 2.0).abs() < 1e-9);
    }
}
