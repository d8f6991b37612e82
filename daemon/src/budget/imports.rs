//! Which project files a file imports, for Rust, Python, TypeScript /
//! JavaScript and Go: enough to measure how far a file is from the ones the
//! task is about. Only imports that resolve to files of the project count.

use std::collections::{HashMap, HashSet, VecDeque};

/// Project files `rel` imports.
pub fn imports(
    rel: &str,
    content: &str,
    files: &HashSet<String>,
    go_module: Option<&str>,
) -> Vec<String> {
    let ext = rel.rsplit('.').next().unwrap_or("");
    let mut out: Vec<String> = match ext {
        "rs" => rust(rel, content, files),
        "py" | "pyi" => python(rel, content, files),
        "ts" | "tsx" | "js" | "jsx" | "mjs" | "cjs" | "mts" | "cts" => script(rel, content, files),
        "go" => go(rel, content, files, go_module),
        _ => Vec::new(),
    };
    out.retain(|f| f != rel);
    out.sort();
    out.dedup();
    out
}

fn dir_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

fn join(dir: &str, rest: &str) -> String {
    let mut parts: Vec<&str> = if dir.is_empty() {
        Vec::new()
    } else {
        dir.split('/').collect()
    };
    for seg in rest.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

fn first_existing(
    candidates: impl IntoIterator<Item = String>,
    files: &HashSet<String>,
) -> Option<String> {
    candidates.into_iter().find(|c| files.contains(c))
}

/// `mod x;`, `use crate::a::b`, `use super::x`, `use self::x`.
fn rust(rel: &str, content: &str, files: &HashSet<String>) -> Vec<String> {
    let dir = dir_of(rel);
    let name = rel.rsplit('/').next().unwrap_or(rel);
    // Where this file's child modules live.
    let module_dir = match name {
        "lib.rs" | "main.rs" | "mod.rs" => dir.to_owned(),
        _ => join(dir, name.trim_end_matches(".rs")),
    };
    // The crate root: the `src` directory above this file.
    let crate_root = rel
        .find("src/")
        .map(|i| rel[..i + 3].to_owned())
        .unwrap_or_else(|| dir.to_owned());
    let module_file = |base: &str, path: &[&str]| -> Option<String> {
        // The longest prefix of the path that is a module file.
        (1..=path.len()).rev().find_map(|n| {
            let joined = path[..n].join("/");
            first_existing(
                [
                    join(base, &format!("{joined}.rs")),
                    join(base, &format!("{joined}/mod.rs")),
                ],
                files,
            )
        })
    };
    let mut out = Vec::new();
    for line in content.lines().map(str::trim) {
        let line = line.strip_prefix("pub ").unwrap_or(line);
        let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
        if let Some(m) = line.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            out.extend(module_file(&module_dir, &[m.trim()]));
        } else if let Some(path) = line.strip_prefix("use ") {
            let path = path.trim_end_matches(';');
            let segs: Vec<&str> = path
                .split("::")
                .map(|s| s.trim_matches(|c| c == '{' || c == '}' || c == ' '))
                .collect();
            let (base, rest) = match segs.first() {
                Some(&"crate") => (crate_root.clone(), &segs[1..]),
                Some(&"self") => (module_dir.clone(), &segs[1..]),
                Some(&"super") => (dir.to_owned(), &segs[1..]),
                _ => continue,
            };
            let rest: Vec<&str> = rest
                .iter()
                .copied()
                .filter(|s| !s.is_empty() && !s.contains(','))
                .collect();
            out.extend(module_file(&base, &rest));
        }
    }
    out
}

/// `import a.b`, `from a.b import c`, `from .x import y`, `from . import x`.
fn python(rel: &str, content: &str, files: &HashSet<String>) -> Vec<String> {
    let dir = dir_of(rel);
    let resolve = |base: &str, dotted: &str| -> Option<String> {
        let path = dotted.replace('.', "/");
        first_existing(
            [
                join(base, &format!("{path}.py")),
                join(base, &format!("{path}/__init__.py")),
            ],
            files,
        )
    };
    let mut out = Vec::new();
    for line in content.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("from ") {
            let Some((module, names)) = rest.split_once(" import ") else {
                continue;
            };
            let dots = module.chars().take_while(|c| *c == '.').count();
            let module = &module[dots..];
            let base = if dots == 0 {
                String::new()
            } else {
                join(dir, &"../".repeat(dots - 1))
            };
            // `from pkg import mod` may import a module, not a name.
            for name in names.split(',').map(|n| {
                n.split_whitespace()
                    .next()
                    .unwrap_or("")
                    .trim_matches(|c| c == '(' || c == ')')
            }) {
                let dotted = if module.is_empty() {
                    name.to_owned()
                } else {
                    format!("{module}.{name}")
                };
                if let Some(found) = resolve(&base, &dotted) {
                    out.push(found);
                }
            }
            if !module.is_empty() {
                out.extend(resolve(&base, module));
            }
        } else if let Some(rest) = line.strip_prefix("import ") {
            for module in rest
                .split(',')
                .map(|m| m.split_whitespace().next().unwrap_or(""))
            {
                out.extend(resolve("", module));
            }
        }
    }
    out
}

/// Relative `import … from "./x"`, `export … from "./x"`, `require("./x")`, `import("./x")`.
fn script(rel: &str, content: &str, files: &HashSet<String>) -> Vec<String> {
    let dir = dir_of(rel);
    let mut out = Vec::new();
    for line in content.lines() {
        if !(line.contains("import") || line.contains("require") || line.contains("export")) {
            continue;
        }
        for quote in ['"', '\''] {
            let mut rest = line;
            while let Some(start) = rest.find(quote) {
                let after = &rest[start + 1..];
                let Some(end) = after.find(quote) else { break };
                let spec = &after[..end];
                if spec.starts_with("./") || spec.starts_with("../") {
                    let base = join(dir, spec);
                    let candidates = [
                        "",
                        ".ts",
                        ".tsx",
                        ".js",
                        ".jsx",
                        ".mjs",
                        ".cjs",
                        "/index.ts",
                        "/index.tsx",
                        "/index.js",
                    ]
                    .iter()
                    .map(|suffix| format!("{base}{suffix}"));
                    out.extend(first_existing(candidates, files));
                }
                rest = &after[end + 1..];
            }
        }
    }
    out
}

/// `import "module/path/pkg"` (grouped or not) of the project's own module.
fn go(rel: &str, content: &str, files: &HashSet<String>, module: Option<&str>) -> Vec<String> {
    let Some(module) = module else {
        return Vec::new();
    };
    let mut in_group = false;
    let mut paths = Vec::new();
    for line in content.lines().map(str::trim) {
        if line.starts_with("import (") {
            in_group = true;
            continue;
        }
        if in_group && line.starts_with(')') {
            in_group = false;
            continue;
        }
        let spec = if in_group {
            line
        } else if let Some(rest) = line.strip_prefix("import ") {
            rest
        } else {
            continue;
        };
        if let Some(path) = spec.split('"').nth(1)
            && let Some(local) = path.strip_prefix(module)
        {
            paths.push(local.trim_start_matches('/').to_owned());
        }
    }
    let own_dir = dir_of(rel);
    paths
        .into_iter()
        .flat_map(|dir| {
            files
                .iter()
                .filter(move |f| dir_of(f) == dir && f.ends_with(".go") && !f.ends_with("_test.go"))
                .cloned()
                .collect::<Vec<_>>()
        })
        .filter(|f| dir_of(f) != own_dir)
        .collect()
}

/// The module path of a Go project, from `go.mod`.
pub fn go_module(go_mod: &str) -> Option<String> {
    go_mod.lines().find_map(|l| {
        l.trim()
            .strip_prefix("module ")
            .map(|m| m.trim().to_owned())
    })
}

/// Distances from `start` files through imports (either direction), up to `max_depth`.
pub fn distances(
    start: &[String],
    edges: &HashMap<String, Vec<String>>,
    max_depth: u32,
) -> HashMap<String, u32> {
    let mut undirected: HashMap<&str, Vec<&str>> = HashMap::new();
    for (from, tos) in edges {
        for to in tos {
            undirected.entry(from).or_default().push(to);
            undirected.entry(to).or_default().push(from);
        }
    }
    let mut dist: HashMap<String, u32> = HashMap::new();
    let mut queue: VecDeque<(&str, u32)> = VecDeque::new();
    for s in start {
        if dist.insert(s.clone(), 0).is_none() {
            queue.push_back((s, 0));
        }
    }
    while let Some((node, d)) = queue.pop_front() {
        if d >= max_depth {
            continue;
        }
        for next in undirected.get(node).into_iter().flatten() {
            if !dist.contains_key(*next) {
                dist.insert((*next).to_owned(), d + 1);
                queue.push_back((next, d + 1));
            }
        }
    }
    dist
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(files: &[&str]) -> HashSet<String> {
        files.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn rust_modules_and_uses() {
        let files = set(&[
            "src/lib.rs",
            "src/auth.rs",
            "src/auth/token.rs",
            "src/client/mod.rs",
            "src/util.rs",
        ]);
        let lib = "mod auth;\npub mod client;\nuse crate::util::helper;\n";
        assert_eq!(
            imports("src/lib.rs", lib, &files, None),
            vec!["src/auth.rs", "src/client/mod.rs", "src/util.rs"]
        );
        let auth = "mod token;\nuse super::util;\nuse std::fmt;\n";
        assert_eq!(
            imports("src/auth.rs", auth, &files, None),
            vec!["src/auth/token.rs", "src/util.rs"]
        );
    }

    #[test]
    fn python_absolute_and_relative() {
        let files = set(&[
            "app/__init__.py",
            "app/client.py",
            "app/auth/__init__.py",
            "app/auth/token.py",
            "main.py",
        ]);
        let main = "import app.client\nfrom app.auth import token\nimport os\n";
        assert_eq!(
            imports("main.py", main, &files, None),
            vec!["app/auth/__init__.py", "app/auth/token.py", "app/client.py"]
        );
        let token = "from .. import client\nfrom . import __init__\n";
        assert_eq!(
            imports("app/auth/token.py", token, &files, None),
            vec!["app/auth/__init__.py", "app/client.py"]
        );
    }

    #[test]
    fn scripts_resolve_extensions_and_index() {
        let files = set(&[
            "src/client.ts",
            "src/auth/index.ts",
            "src/util.js",
            "src/ui/button.tsx",
        ]);
        let src = "import { a } from './auth';\nconst u = require(\"./util\");\nexport * from './ui/button';\nimport x from 'react';\n";
        assert_eq!(
            imports("src/client.ts", src, &files, None),
            vec!["src/auth/index.ts", "src/ui/button.tsx", "src/util.js"]
        );
    }

    #[test]
    fn go_packages_of_the_module() {
        let files = set(&[
            "go.mod",
            "cmd/app/main.go",
            "auth/token.go",
            "auth/token_test.go",
            "auth/refresh.go",
        ]);
        let module = go_module("module example.com/app\n\ngo 1.22\n").unwrap();
        let main = "package main\n\nimport (\n\t\"fmt\"\n\t\"example.com/app/auth\"\n)\n";
        assert_eq!(
            imports("cmd/app/main.go", main, &files, Some(&module)),
            vec!["auth/refresh.go", "auth/token.go"]
        );
    }

    #[test]
    fn distances_follow_imports_both_ways_up_to_the_limit() {
        let edges = HashMap::from([
            ("a".to_string(), vec!["b".to_string()]),
            ("b".to_string(), vec!["c".to_string()]),
            ("c".to_string(), vec!["d".to_string()]),
            ("d".to_string(), vec!["e".to_string()]),
            ("x".to_string(), vec!["a".to_string()]),
        ]);
        let d = distances(&["a".to_string()], &edges, 3);
        assert_eq!((d["a"], d["b"], d["c"], d["d"], d["x"]), (0, 1, 2, 3, 1));
        assert!(!d.contains_key("e"), "beyond the maximum depth");
    }
}
