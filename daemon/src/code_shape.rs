//! Checks on the shape of the code itself, read from the three crates'
//! sources: no import cycle between a crate's top-level modules, and no
//! production function longer than a screenful or three. Test code (an
//! item under `#[cfg(test)]`, a `#[test]` function) is exempt from both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Longest production function, in lines, braces included.
const MAX_FUNCTION_LINES: usize = 150;

/// Import edges between top-level modules that are allowed to close a
/// cycle, each with why. None today: a new one needs a reason here.
const ALLOWED_CYCLE_EDGES: &[(&str, &str, &str)] = &[];

/// Functions allowed over the limit (`<file>::<name>`), each with why.
/// None today: a new one needs a reason here.
const ALLOWED_LONG_FUNCTIONS: &[(&str, &str)] = &[];

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

/// The production sources under `dir`: a module's `tests.rs` is its
/// `#[cfg(test)] mod tests;`, test code like a `mod tests { … }` block.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

/// The source with comments, string and character literals blanked out
/// (newlines kept, so line numbers still hold).
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('"' | '#')) && starts_word(&chars, i) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let closes = |k: usize| {
                chars.get(k) == Some(&'"') && (1..=hashes).all(|h| chars.get(k + h) == Some(&'#'))
            };
            while j < chars.len() && !closes(j) {
                j += 1;
            }
            let end = (j + 1 + hashes).min(chars.len());
            out.extend(chars[i..end].iter().map(|c| blank(*c)));
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if let Some(&c) = chars.get(i) {
                    out.push(blank(c));
                }
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1f}'), not a lifetime.
            let end = if next == Some('\\') {
                (i + 2..chars.len().min(i + 12)).find(|&k| chars[k] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.extend(std::iter::repeat_n(' ', end + 1 - i));
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether the token at `i` starts a word (`b` of a byte string aside).
fn starts_word(chars: &[char], i: usize) -> bool {
    let word = |k: usize| {
        chars
            .get(k)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
    };
    match i.checked_sub(1) {
        None => true,
        Some(before) if chars[before] == 'b' => before == 0 || !word(before - 1),
        Some(before) => !word(before),
    }
}

/// The byte just past the item starting at `from`: its matching `}`, or
/// the `;` or `,` that ends it first (a statement, a field), outside any
/// brackets.
fn item_end(code: &str, from: usize) -> usize {
    let (mut braces, mut brackets) = (0usize, 0usize);
    for (k, b) in code.bytes().enumerate().skip(from) {
        match b {
            b'{' => braces += 1,
            b'}' if braces == 0 => return k,
            b'}' => {
                braces -= 1;
                if braces == 0 {
                    return k + 1;
                }
            }
            b'(' | b'[' => brackets += 1,
            b')' | b']' => brackets = brackets.saturating_sub(1),
            b';' | b',' if braces == 0 && brackets == 0 => return k + 1,
            _ => {}
        }
    }
    code.len()
}

/// `code` with every item marked `#[cfg(test)]` or `#[test]` blanked out.
fn without_tests(code: &str) -> String {
    let mut out = code.to_owned();
    for marker in ["#[cfg(test)]", "#[test]"] {
        let mut from = 0;
        while let Some(at) = out[from..].find(marker).map(|k| k + from) {
            let end = item_end(&out, at + marker.len());
            let blanked: String = out[at..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' })
                .collect();
            out.replace_range(at..end, &blanked);
            from = at + blanked.len();
        }
    }
    out
}

/// The top-level module a file under `src` belongs to; `None` for the
/// crate root.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_owned())
}

/// For each top-level module, the top-level modules its production code
/// names through `crate::`, each with a file that does.
fn import_graph(src: &Path) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for file in files {
        let Some(from) = top_module(src, &file) else {
            continue;
        };
        let source = std::fs::read_to_string(&file).expect("source file");
        let code = without_tests(&code_only(&source));
        let edges = graph.entry(from.clone()).or_default();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let targets: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                group.split(',').map(path_head).collect()
            } else {
                vec![path_head(rest)]
            };
            for to in targets {
                if !to.is_empty() && to != from {
                    edges.entry(to.to_owned()).or_insert_with(|| file.clone());
                }
            }
        }
    }
    graph
}

fn path_head(path: &str) -> &str {
    let path = path.trim_start();
    let end = path
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(path.len());
    &path[..end]
}

/// One cycle in `graph`, as the modules along it, if there is any.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

fn assert_acyclic(crate_name: &str) {
    let src = crate_src(crate_name);
    let graph = import_graph(&src);
    let allowed: BTreeSet<(&str, &str)> = ALLOWED_CYCLE_EDGES
        .iter()
        .map(|(from, to, _why)| (*from, *to))
        .collect();
    let edges: BTreeMap<String, BTreeSet<String>> = graph
        .iter()
        .map(|(from, tos)| {
            let tos = tos
                .keys()
                .filter(|to| !allowed.contains(&(from.as_str(), to.as_str())))
                .cloned()
                .collect();
            (from.clone(), tos)
        })
        .collect();
    if let Some(cycle) = find_cycle(&edges) {
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|pair| {
                let file = &graph[&pair[0]][&pair[1]];
                let file = file.strip_prefix(&src).unwrap_or(file);
                format!("{} -> {} (in {})", pair[0], pair[1], file.display())
            })
            .collect();
        panic!(
            "{crate_name}/src: import cycle between top-level modules:\n  {}\n\
             move what both sides need into a module that imports neither",
            steps.join("\n  ")
        );
    }
}

#[test]
fn the_daemons_top_level_modules_import_each_other_without_cycles() {
    assert_acyclic("daemon");
}

#[test]
fn protocols_modules_import_each_other_without_cycles() {
    assert_acyclic("protocol");
}

#[test]
fn hookctls_modules_import_each_other_without_cycles() {
    assert_acyclic("hookctl");
}

/// Each function in `code` (already without tests): its name, first line
/// and length in lines.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name = path_head(&code[at + 3..]);
        if name.is_empty() {
            continue;
        }
        let Some(open) = body_start(&code[at..]) else {
            continue;
        };
        let end = item_end(code, at + open);
        out.push((name.to_owned(), line_of(at), line_of(end) - line_of(at) + 1));
    }
    out
}

/// Where a function's body opens: the first `{` outside its parameters
/// and array types, before any `;` (a declaration has no body).
fn body_start(signature: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (k, b) in signature.bytes().enumerate() {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b'{' if depth == 0 => return Some(k),
            b';' if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

#[test]
fn no_production_function_is_longer_than_the_limit() {
    let mut too_long = Vec::new();
    for crate_name in ["daemon", "protocol", "hookctl"] {
        let src = crate_src(crate_name);
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let source = std::fs::read_to_string(&file).expect("source file");
            let code = without_tests(&code_only(&source));
            let shown = format!(
                "{crate_name}/src/{}",
                file.strip_prefix(&src).unwrap_or(&file).display()
            );
            for (name, line, lines) in functions(&code) {
                let allowed = ALLOWED_LONG_FUNCTIONS
                    .iter()
                    .any(|(at, _why)| *at == format!("{shown}::{name}"));
                if lines > MAX_FUNCTION_LINES && !allowed {
                    too_long.push(format!("{shown}:{line}: fn {name}, {lines} lines"));
                }
            }
        }
    }
    assert!(
        too_long.is_empty(),
        "functions longer than {MAX_FUNCTION_LINES} lines; split each into named steps:\n  {}",
        too_long.join("\n  ")
    );
}

#[test]
fn the_scanner_sees_through_comments_strings_and_tests() {
    let source = "use crate::a; // crate::b\nlet s = \"crate::c\"; let r = r#\"crate::d\"#;\n\
                  #[cfg(test)]\nmod tests { use crate::e; }\nfn f<'a>(x: &'a str) { let c = '{'; crate::g::h(); }\n\
                  struct S {\n#[cfg(test)]\nn: u64,\nm: u64 }\n\
                  fn k() {\nlet s = S {\n#[cfg(test)]\nn: 1,\nm: 2,\n};\n#[cfg(test)]\ns.n.add(1, 2);\ncrate::l();\n}\nfn z() {}\n";
    let code = without_tests(&code_only(source));
    let named: Vec<&str> = code
        .match_indices("crate::")
        .map(|(at, _)| path_head(&code[at + 7..]))
        .collect();
    assert_eq!(named, ["a", "g", "l"]);
    // A field or a statement only tests have ends at its `,` or `;`.
    assert_eq!(
        functions(&code),
        [
            ("f".to_owned(), 5, 1),
            ("k".to_owned(), 10, 10),
            ("z".to_owned(), 20, 1)
        ]
    );
    let cyclic: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_owned(), ["b".to_owned()].into()),
        ("b".to_owned(), ["a".to_owned()].into()),
    ]
    .into();
    assert_eq!(
        find_cycle(&cyclic),
        Some(vec!["a".into(), "b".into(), "a".into()])
    );
}
