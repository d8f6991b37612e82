//! A source file's structure, read with a real parser (tree-sitter): the
//! signatures of its functions, its type, class and interface definitions,
//! and their doc comments, without the bodies. All tree-sitter code lives
//! here. Rust, Python, TypeScript / JavaScript and Go are understood.

use std::collections::HashMap;
use tree_sitter::{Language, Node, Parser};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Python,
    TypeScript,
    /// JavaScript and TSX, read with the TSX grammar (JSX included).
    Tsx,
    Go,
}

impl Lang {
    pub fn of_path(path: &str) -> Option<Lang> {
        let ext = path.rsplit('.').next()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" | "js" | "jsx" | "mjs" | "cjs" => Lang::Tsx,
            "go" => Lang::Go,
            _ => return None,
        })
    }

    fn grammar(self) -> Language {
        match self {
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }
}

/// One top-level (or member) definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// `function`, `struct`, `class`, `interface`, `type`, `impl`, ...
    pub kind: &'static str,
    pub name: String,
    /// Doc comment and signature, body elided.
    pub text: String,
    pub members: Vec<Item>,
    /// A hash of the definition's whole source, body included: whether it changed.
    pub source_hash: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    /// The file's own doc comment or docstring.
    pub module_doc: Option<String>,
    pub items: Vec<Item>,
    /// The parser met syntax it could not read (the outline may miss parts).
    pub had_errors: bool,
}

impl Outline {
    /// The outline as text: docs and signatures, members indented.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(doc) = &self.module_doc {
            out.push_str(doc);
            out.push_str("\n\n");
        }
        for item in &self.items {
            out.push_str(&item.text);
            out.push('\n');
            for member in &item.members {
                for line in member.text.lines() {
                    out.push_str("    ");
                    out.push_str(line);
                    out.push('\n');
                }
            }
            out.push('\n');
        }
        out
    }
}

/// Lines kept of a definition shown whole (a struct, an interface) before eliding.
const MAX_WHOLE_LINES: usize = 25;

pub fn outline(source: &str, lang: Lang) -> Outline {
    let mut parser = Parser::new();
    if parser.set_language(&lang.grammar()).is_err() {
        return Outline::default();
    }
    let Some(tree) = parser.parse(source, None) else {
        return Outline::default();
    };
    let root = tree.root_node();
    let reader = Reader { src: source, lang };
    let mut outline = Outline {
        had_errors: root.has_error(),
        ..Outline::default()
    };
    outline.module_doc = reader.module_doc(root);
    outline.items = reader.items(root);
    outline
}

/// What changed between two versions of a file, by definition: names
/// (`fn parse`, `class Client`, `Client.refresh`), each list in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DefinitionChanges {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub edited: Vec<String>,
}

impl DefinitionChanges {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.edited.is_empty()
    }

    /// `added fn a, fn b; edited fn c; removed struct D`, at most `max`
    /// names in all (then `(and N more)`).
    pub fn describe(&self, max: usize) -> String {
        let mut left = max;
        let mut hidden = 0;
        let mut parts = Vec::new();
        for (verb, names) in [
            ("added", &self.added),
            ("edited", &self.edited),
            ("removed", &self.removed),
        ] {
            let shown: Vec<&str> = names.iter().take(left).map(String::as_str).collect();
            left -= shown.len();
            hidden += names.len() - shown.len();
            if !shown.is_empty() {
                parts.push(format!("{verb} {}", shown.join(", ")));
            }
        }
        let mut text = parts.join("; ");
        if hidden > 0 {
            text = match text.is_empty() {
                true => format!("{hidden} definitions changed"),
                false => format!("{text} (and {hidden} more)"),
            };
        }
        text
    }
}

/// The definitions added, removed or edited from `old` to `new` (either may
/// be absent: a created or deleted file). Members of types, classes and
/// impls are compared one by one.
pub fn changed_definitions(old: Option<&str>, new: Option<&str>, lang: Lang) -> DefinitionChanges {
    // Keyed by name and occurrence: two impls of one type can each have an
    // `fn fmt`, and each is compared with its own counterpart.
    let flatten = |source: Option<&str>| -> Vec<((String, usize), u64)> {
        let Some(source) = source else {
            return Vec::new();
        };
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut out = Vec::new();
        let mut push = |name: String, hash: u64| {
            let nth = seen.entry(name.clone()).or_default();
            out.push(((name, *nth), hash));
            *nth += 1;
        };
        for item in outline(source, lang).items {
            let label = item.label();
            if item.members.is_empty() {
                push(label, item.source_hash);
                continue;
            }
            // A container is edited when its members are: list those instead.
            push(format!("{label} (head)"), 0);
            for member in &item.members {
                push(format!("{}.{}", item.name, member.name), member.source_hash);
            }
        }
        out
    };
    let before = flatten(old);
    let after = flatten(new);
    let before_hashes: HashMap<&(String, usize), u64> =
        before.iter().map(|(k, h)| (k, *h)).collect();
    let after_hashes: HashMap<&(String, usize), u64> = after.iter().map(|(k, h)| (k, *h)).collect();
    let mut changes = DefinitionChanges::default();
    let note = |list: &mut Vec<String>, name: &str| {
        let plain = name.strip_suffix(" (head)").unwrap_or(name);
        if !list.iter().any(|n| n == plain) {
            list.push(plain.to_owned());
        }
    };
    for (key, hash) in &after {
        match before_hashes.get(key) {
            None => note(&mut changes.added, &key.0),
            Some(old_hash) if old_hash != hash => note(&mut changes.edited, &key.0),
            Some(_) => {}
        }
    }
    for (key, _) in &before {
        if !after_hashes.contains_key(key) {
            note(&mut changes.removed, &key.0);
        }
    }
    changes
}

impl Item {
    /// `fn parse`, `struct Token`, `class Client`: how a change names it.
    fn label(&self) -> String {
        let kind = match self.kind {
            "function" | "method" => "fn",
            other => other,
        };
        if self.name.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind} {}", self.name)
        }
    }
}

struct Reader<'s> {
    src: &'s str,
    lang: Lang,
}

impl<'s> Reader<'s> {
    fn text(&self, node: Node) -> &'s str {
        &self.src[node.start_byte()..node.end_byte()]
    }

    fn source_hash(&self, node: Node) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.text(node).hash(&mut hasher);
        hasher.finish()
    }

    /// The node's text up to where its body starts, with the body elided.
    fn head(&self, node: Node, body: Option<Node>) -> String {
        match body {
            Some(body) => {
                let head = self.src[node.start_byte()..body.start_byte()].trim_end();
                match self.lang {
                    Lang::Python => head.to_owned(),
                    _ => format!("{head} {{ … }}"),
                }
            }
            None => self.text(node).trim_end().to_owned(),
        }
    }

    fn whole(&self, node: Node) -> String {
        let text = self.text(node);
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() <= MAX_WHOLE_LINES {
            return text.to_owned();
        }
        let mut kept = lines[..MAX_WHOLE_LINES].join("\n");
        kept.push_str(&format!(
            "\n    … ({} more lines)",
            lines.len() - MAX_WHOLE_LINES
        ));
        kept
    }

    fn name(&self, node: Node) -> String {
        node.child_by_field_name("name")
            .map(|n| self.text(n).to_owned())
            .unwrap_or_default()
    }

    /// Comments (and, in Rust, attributes) right above `node`.
    fn leading_doc(&self, node: Node) -> String {
        let mut parts = Vec::new();
        let mut prev = node.prev_sibling();
        while let Some(p) = prev {
            let kind = p.kind();
            let is_doc = match self.lang {
                Lang::Rust => {
                    (kind == "line_comment" && self.text(p).starts_with("///"))
                        || (kind == "block_comment" && self.text(p).starts_with("/**"))
                        || kind == "attribute_item"
                }
                Lang::Go => kind == "comment",
                Lang::TypeScript | Lang::Tsx => {
                    kind == "comment" && self.text(p).starts_with("/**")
                }
                Lang::Python => false,
            };
            // Only comments that touch the item (no blank line between).
            let adjacent = node
                .start_position()
                .row
                .saturating_sub(p.end_position().row)
                <= 1;
            if !is_doc || !adjacent {
                break;
            }
            parts.push(self.text(p).trim_end().to_owned());
            prev = p.prev_sibling();
            if let Some(next) = prev
                && p.start_position()
                    .row
                    .saturating_sub(next.end_position().row)
                    > 1
            {
                break;
            }
        }
        parts.reverse();
        parts.join("\n")
    }

    fn with_doc(&self, doc: String, text: String) -> String {
        if doc.is_empty() {
            text
        } else {
            format!("{doc}\n{text}")
        }
    }

    fn module_doc(&self, root: Node) -> Option<String> {
        let mut cursor = root.walk();
        let children: Vec<Node> = root.children(&mut cursor).collect();
        match self.lang {
            Lang::Rust => {
                let lines: Vec<&str> = children
                    .iter()
                    .take_while(|n| n.kind() == "line_comment" || n.kind() == "block_comment")
                    .map(|n| self.text(*n))
                    .filter(|t| t.starts_with("//!") || t.starts_with("/*!"))
                    .collect();
                (!lines.is_empty()).then(|| lines.join("\n"))
            }
            Lang::Python => children
                .first()
                .and_then(|n| self.docstring_of_statement(*n)),
            Lang::Go => {
                let package = children.iter().position(|n| n.kind() == "package_clause")?;
                let doc = self.leading_doc(children[package]);
                (!doc.is_empty()).then_some(doc)
            }
            // A leading doc comment is the file's unless it sits right on top of an item.
            Lang::TypeScript | Lang::Tsx => children
                .first()
                .filter(|n| n.kind() == "comment" && self.text(**n).starts_with("/**"))
                .filter(|n| {
                    children.get(1).is_none_or(|next| {
                        next.kind() == "import_statement"
                            || next.start_position().row > n.end_position().row + 1
                    })
                })
                .map(|n| self.text(*n).to_owned()),
        }
    }

    /// A string literal statement (a Python docstring).
    fn docstring_of_statement(&self, node: Node) -> Option<String> {
        if node.kind() != "expression_statement" {
            return None;
        }
        let first = node.named_child(0)?;
        (first.kind() == "string").then(|| self.text(first).to_owned())
    }

    fn items(&self, parent: Node) -> Vec<Item> {
        let mut cursor = parent.walk();
        let children: Vec<Node> = parent.named_children(&mut cursor).collect();
        children.into_iter().filter_map(|n| self.item(n)).collect()
    }

    fn item(&self, node: Node) -> Option<Item> {
        match self.lang {
            Lang::Rust => self.rust_item(node),
            Lang::Python => self.python_item(node, None),
            Lang::TypeScript | Lang::Tsx => self.ts_item(node, ""),
            Lang::Go => self.go_item(node),
        }
    }

    fn simple(&self, kind: &'static str, node: Node, text: String) -> Item {
        Item {
            kind,
            name: self.name(node),
            text: self.with_doc(self.leading_doc(node), text),
            members: Vec::new(),
            source_hash: self.source_hash(node),
        }
    }

    fn rust_item(&self, node: Node) -> Option<Item> {
        let body = node.child_by_field_name("body");
        Some(match node.kind() {
            "function_item" => self.simple("function", node, self.head(node, body)),
            "function_signature_item" => self.simple("function", node, self.text(node).to_owned()),
            "struct_item" => self.simple("struct", node, self.whole(node)),
            "enum_item" => self.simple("enum", node, self.whole(node)),
            "union_item" => self.simple("union", node, self.whole(node)),
            "type_item" => self.simple("type", node, self.whole(node)),
            "const_item" => self.simple("const", node, self.whole(node)),
            "static_item" => self.simple("static", node, self.whole(node)),
            "macro_definition" => self.simple(
                "macro",
                node,
                format!("macro_rules! {} {{ … }}", self.name(node)),
            ),
            "mod_item" => self.simple("module", node, self.head(node, body)),
            "trait_item" | "impl_item" => {
                let kind = if node.kind() == "trait_item" {
                    "trait"
                } else {
                    "impl"
                };
                let mut item = self.simple(kind, node, self.head(node, body));
                if kind == "impl" {
                    item.name = node
                        .child_by_field_name("type")
                        .map(|t| self.text(t).to_owned())
                        .unwrap_or_default();
                }
                item.members = body.map(|b| self.items(b)).unwrap_or_default();
                item
            }
            _ => return None,
        })
    }

    fn python_item(&self, node: Node, decorated: Option<Node>) -> Option<Item> {
        let outer = decorated.unwrap_or(node);
        match node.kind() {
            "decorated_definition" => {
                let definition = node.child_by_field_name("definition")?;
                self.python_item(definition, Some(node))
            }
            "function_definition" | "class_definition" => {
                let body = node.child_by_field_name("body");
                // Decorators and the `def`/`class` line, then the docstring.
                let head = self.src
                    [outer.start_byte()..body.map_or(node.end_byte(), |b| b.start_byte())]
                    .trim_end();
                let doc = body
                    .and_then(|b| b.named_child(0))
                    .and_then(|first| self.docstring_of_statement(first));
                let text = match doc {
                    Some(doc) => format!("{head}\n    {doc}"),
                    None => head.to_owned(),
                };
                let kind = if node.kind() == "class_definition" {
                    "class"
                } else {
                    "function"
                };
                let mut item = Item {
                    kind,
                    name: self.name(node),
                    text,
                    members: Vec::new(),
                    source_hash: self.source_hash(outer),
                };
                if kind == "class" {
                    item.members = body.map(|b| self.items(b)).unwrap_or_default();
                }
                Some(item)
            }
            // Module constants (UPPER_CASE = ...) are part of the interface.
            "expression_statement" => {
                let assignment = node.named_child(0).filter(|n| n.kind() == "assignment")?;
                let left = assignment.child_by_field_name("left")?;
                let name = self.text(left);
                let constant = name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                (constant && !name.is_empty()).then(|| Item {
                    kind: "const",
                    name: name.to_owned(),
                    text: self.text(node).lines().next().unwrap_or("").to_owned(),
                    members: Vec::new(),
                    source_hash: self.source_hash(node),
                })
            }
            _ => None,
        }
    }

    fn ts_item(&self, node: Node, prefix: &str) -> Option<Item> {
        let body = node.child_by_field_name("body");
        let doc_of = |n: Node| self.leading_doc(n);
        let make = |kind: &'static str, text: String| Item {
            kind,
            name: self.name(node),
            text: self.with_doc(doc_of(node), format!("{prefix}{text}")),
            members: Vec::new(),
            source_hash: self.source_hash(node),
        };
        Some(match node.kind() {
            "export_statement" => {
                let inner = node.child_by_field_name("declaration")?;
                let default = if self.text(node).starts_with("export default") {
                    "export default "
                } else {
                    "export "
                };
                let mut item = self.ts_item(inner, default)?;
                let doc = self.leading_doc(node);
                if !doc.is_empty() {
                    item.text = format!("{doc}\n{}", item.text);
                }
                item
            }
            "function_declaration" | "generator_function_declaration" => {
                make("function", self.head(node, body))
            }
            "method_definition" => make("method", self.head(node, body)),
            "method_signature"
            | "abstract_method_signature"
            | "public_field_definition"
            | "property_signature" => {
                make("member", self.text(node).trim_end_matches(';').to_owned())
            }
            "interface_declaration" => make("interface", self.whole(node)),
            "type_alias_declaration" => make("type", self.whole(node)),
            "enum_declaration" => make("enum", self.whole(node)),
            "class_declaration" | "abstract_class_declaration" => {
                let mut item = make("class", self.head(node, body));
                item.members = body
                    .map(|b| {
                        let mut cursor = b.walk();
                        let members: Vec<Node> = b.named_children(&mut cursor).collect();
                        members
                            .into_iter()
                            .filter_map(|m| self.ts_item(m, ""))
                            .collect()
                    })
                    .unwrap_or_default();
                item
            }
            "lexical_declaration" | "variable_declaration" => {
                // `const f = (…) => …`: show the callable's head; short values whole.
                let declarator = node
                    .named_child(0)
                    .filter(|d| d.kind() == "variable_declarator")?;
                let value = declarator.child_by_field_name("value");
                let text = match value.filter(|v| {
                    matches!(
                        v.kind(),
                        "arrow_function" | "function_expression" | "function"
                    )
                }) {
                    Some(f) => self.head(node, f.child_by_field_name("body")),
                    None if self.text(node).lines().count() <= 3 => self.text(node).to_owned(),
                    None => format!(
                        "{} = …",
                        self.src
                            [node.start_byte()..value.map_or(node.end_byte(), |v| v.start_byte())]
                            .trim_end()
                            .trim_end_matches('=')
                            .trim_end()
                    ),
                };
                let mut item = make("const", text);
                item.name = declarator
                    .child_by_field_name("name")
                    .map(|n| self.text(n).to_owned())
                    .unwrap_or_default();
                item
            }
            _ => return None,
        })
    }

    fn go_item(&self, node: Node) -> Option<Item> {
        let body = node.child_by_field_name("body");
        Some(match node.kind() {
            "function_declaration" => self.simple("function", node, self.head(node, body)),
            "method_declaration" => self.simple("method", node, self.head(node, body)),
            "type_declaration" => {
                let mut item = self.simple("type", node, self.whole(node));
                let spec = node.named_child(0);
                item.name = spec
                    .and_then(|s| s.child_by_field_name("name"))
                    .map(|n| self.text(n).to_owned())
                    .unwrap_or_default();
                item
            }
            "const_declaration" | "var_declaration" => self.simple("const", node, self.whole(node)),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_named_by_definition_and_member() {
        let old = "struct Parser;\n\nimpl Parser {\n    fn new() -> Self { Parser }\n    fn parse(&self) -> u8 { 1 }\n    fn gone(&self) {}\n}\n\nfn helper() {}\n";
        let new = "struct Parser;\n\nimpl Parser {\n    fn new() -> Self { Parser }\n    fn parse(&self) -> u8 { 2 }\n    fn peek(&self) {}\n}\n\nfn helper() {}\n\nenum Mode { A }\n";
        let changes = changed_definitions(Some(old), Some(new), Lang::Rust);
        assert_eq!(changes.added, ["Parser.peek", "enum Mode"]);
        assert_eq!(changes.edited, ["Parser.parse"]);
        assert_eq!(changes.removed, ["Parser.gone"]);
        assert_eq!(
            changes.describe(8),
            "added Parser.peek, enum Mode; edited Parser.parse; removed Parser.gone"
        );
        assert_eq!(
            changes.describe(2),
            "added Parser.peek, enum Mode (and 2 more)"
        );
        assert_eq!(changes.describe(0), "4 definitions changed");
        let created = changed_definitions(
            None,
            Some("class A:\n    def run(self):\n        pass\n"),
            Lang::Python,
        );
        assert_eq!(created.added, ["class A", "A.run"]);
        assert!(changed_definitions(Some(old), Some(old), Lang::Rust).is_empty());
    }

    #[test]
    fn definitions_of_one_name_are_compared_each_with_its_own() {
        let impls = "impl fmt::Display for A {\n    fn fmt(&self) -> u8 { 1 }\n}\n\nimpl fmt::Debug for A {\n    fn fmt(&self) -> u8 { 2 }\n}\n";
        let old = format!("{impls}\nfn other() -> u8 {{ 1 }}\n");
        let new = format!("{impls}\nfn other() -> u8 {{ 3 }}\n");
        let changes = changed_definitions(Some(&old), Some(&new), Lang::Rust);
        assert_eq!(changes.edited, ["fn other"]);
        assert!(changes.added.is_empty() && changes.removed.is_empty());
        let both_new = changed_definitions(None, Some(impls), Lang::Rust);
        assert_eq!(both_new.added, ["impl A", "A.fmt"], "each name once");
    }

    #[test]
    fn rust_keeps_signatures_types_and_docs() {
        let src = r#"//! Tokens for the parser.

use std::fmt;

/// A token.
#[derive(Debug, Clone)]
pub struct Token {
    pub kind: Kind,
    pub text: String,
}

/// Reads tokens.
pub fn lex(input: &str) -> Vec<Token> {
    let mut out = Vec::new();
    out
}

pub trait Visit {
    fn visit(&mut self, t: &Token);
    fn done(&self) -> bool { true }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.text)
    }
}
"#;
        let o = outline(src, Lang::Rust);
        let text = o.render();
        assert!(text.starts_with("//! Tokens for the parser."), "{text}");
        assert!(
            text.contains(
                "/// A token.\n#[derive(Debug, Clone)]\npub struct Token {\n    pub kind: Kind,"
            ),
            "{text}"
        );
        assert!(
            text.contains("/// Reads tokens.\npub fn lex(input: &str) -> Vec<Token> { … }"),
            "{text}"
        );
        assert!(!text.contains("let mut out"), "bodies are elided: {text}");
        assert!(
            text.contains("    fn visit(&mut self, t: &Token);"),
            "{text}"
        );
        assert!(text.contains("impl fmt::Display for Token { … }\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { … }"), "{text}");
        let names: Vec<&str> = o.items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, vec!["Token", "lex", "Visit", "Token"]);
        assert!(!o.had_errors);
    }

    #[test]
    fn python_keeps_defs_classes_and_docstrings() {
        let src = r#""""OAuth client for the API."""
import requests

TIMEOUT = 30

@dataclass
class Token:
    """An access token."""
    value: str

    def expired(self, now: float) -> bool:
        """Whether the token has expired."""
        return now > self.deadline

async def refresh(client, token: Token) -> Token:
    resp = await client.post("/token")
    return Token(resp.json())
"#;
        let text = outline(src, Lang::Python).render();
        assert!(
            text.starts_with("\"\"\"OAuth client for the API.\"\"\""),
            "{text}"
        );
        assert!(text.contains("TIMEOUT = 30"), "{text}");
        assert!(
            text.contains("@dataclass\nclass Token:\n    \"\"\"An access token.\"\"\""),
            "{text}"
        );
        assert!(text.contains("    def expired(self, now: float) -> bool:\n        \"\"\"Whether the token has expired.\"\"\""), "{text}");
        assert!(
            text.contains("async def refresh(client, token: Token) -> Token:"),
            "{text}"
        );
        assert!(!text.contains("resp.json()"), "{text}");
    }

    #[test]
    fn typescript_keeps_exports_interfaces_and_classes() {
        let src = r#"/** HTTP client with OAuth. */
import { fetch } from "./http";

export interface Options {
  baseUrl: string;
  retries?: number;
}

/** Builds a client. */
export function createClient(opts: Options): Client {
  return new Client(opts);
}

export class Client {
  private token?: string;
  constructor(private opts: Options) {}
  async get(path: string): Promise<Response> {
    return fetch(this.opts.baseUrl + path);
  }
}

export const withRetry = async (n: number) => {
  for (;;) {}
};
type Id = string;
"#;
        let text = outline(src, Lang::TypeScript).render();
        assert!(text.starts_with("/** HTTP client with OAuth. */"), "{text}");
        assert!(
            text.contains("export interface Options {\n  baseUrl: string;"),
            "{text}"
        );
        assert!(
            text.contains(
                "/** Builds a client. */\nexport function createClient(opts: Options): Client { … }"
            ),
            "{text}"
        );
        assert!(text.contains("export class Client { … }"), "{text}");
        assert!(
            text.contains("    async get(path: string): Promise<Response> { … }"),
            "{text}"
        );
        assert!(
            text.contains("export const withRetry = async (n: number) => { … }"),
            "{text}"
        );
        assert!(text.contains("type Id = string;"), "{text}");
        assert!(!text.contains("return fetch"), "{text}");
    }

    #[test]
    fn go_keeps_funcs_methods_and_types() {
        let src = r#"// Package auth handles tokens.
package auth

import "time"

// Token is an access token.
type Token struct {
	Value   string
	Expires time.Time
}

// Refresh gets a new token.
func Refresh(old Token) (Token, error) {
	return old, nil
}

func (t Token) Expired(now time.Time) bool {
	return now.After(t.Expires)
}
"#;
        let text = outline(src, Lang::Go).render();
        assert!(
            text.starts_with("// Package auth handles tokens."),
            "{text}"
        );
        assert!(
            text.contains("// Token is an access token.\ntype Token struct {"),
            "{text}"
        );
        assert!(
            text.contains(
                "// Refresh gets a new token.\nfunc Refresh(old Token) (Token, error) { … }"
            ),
            "{text}"
        );
        assert!(
            text.contains("func (t Token) Expired(now time.Time) bool { … }"),
            "{text}"
        );
        assert!(!text.contains("now.After"), "{text}");
    }

    #[test]
    fn javascript_with_jsx_parses() {
        let src = "/** A button. */\nexport function Button({ label }) {\n  return <button>{label}</button>;\n}\n";
        let o = outline(src, Lang::of_path("ui/button.jsx").unwrap());
        assert!(!o.had_errors);
        assert_eq!(
            o.render().trim(),
            "/** A button. */\nexport function Button({ label }) { … }"
        );
    }

    #[test]
    fn broken_source_still_gives_what_it_can() {
        let o = outline("pub fn ok() {}\nfn broken( {\n", Lang::Rust);
        assert!(o.had_errors);
        assert!(o.render().contains("pub fn ok()"));
    }
}
