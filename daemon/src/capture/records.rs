//! `.workflow/records.jsonl`: what an agent or a person recorded through
//! hookctl (decisions, blockers, the phase, next actions, notes). Append-only,
//! one JSON line per record, folded into the current picture at capture time.

use crate::project_fs::Dir;
use crate::state::{Blocker, Decision, NextAction};
use crate::workflow::Workflow;
use protocol::wire::Record;
use serde::{Deserialize, Serialize};
use std::io;

use crate::workflow::RECORDS_FILE;

#[derive(Serialize, Deserialize)]
struct Line {
    ts: String,
    #[serde(default)]
    session: Option<String>,
    #[serde(flatten)]
    record: Record,
}

/// Appends one record.
/// `record` without what the person marked `<private>` in its words.
pub fn without_private(mut record: Record) -> Record {
    let strip = |text: &mut String| {
        if let std::borrow::Cow::Owned(stripped) = crate::secrets::strip_private(text) {
            *text = stripped;
        }
    };
    let strip_some = |text: &mut Option<String>| text.as_mut().map_or((), strip);
    match &mut record {
        Record::Decision {
            topic,
            decision,
            reasoning,
        } => {
            strip(topic);
            strip(decision);
            strip_some(reasoning);
        }
        Record::Blocker { issue, notes, .. } => {
            strip(issue);
            strip_some(notes);
        }
        Record::Phase { name } => strip(name),
        Record::Next { action, target, .. } => {
            strip(action);
            strip_some(target);
        }
        Record::NextDone { action } => strip(action),
        Record::NextClear => {}
        Record::Note { text } => strip(text),
    }
    record
}

pub fn append(workflow: &Dir, record: &Record, session: Option<&str>) -> io::Result<()> {
    let line = Line {
        ts: crate::time::rfc3339(crate::time::now_ms()),
        session: session.map(str::to_owned),
        record: record.clone(),
    };
    let text = serde_json::to_string(&line).map_err(io::Error::other)?;
    workflow.append_line(RECORDS_FILE, &text)
}

/// The records folded into what holds now.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Records {
    pub decisions: Vec<Decision>,
    /// The latest word on each issue.
    pub blockers: Vec<Blocker>,
    pub phase: Option<String>,
    /// Recorded next actions still open, in the order recorded.
    pub next_actions: Vec<NextAction>,
    pub notes: Vec<String>,
    /// Lines that could not be read (line number and why).
    pub problems: Vec<String>,
}

pub fn load(workflow: &Workflow) -> io::Result<Records> {
    let path = workflow.path(RECORDS_FILE);
    let text = match workflow.read(RECORDS_FILE)? {
        Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        None => return Ok(Records::default()),
    };
    let mut out = Records::default();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let line: Line = match serde_json::from_str(line) {
            Ok(line) => line,
            Err(e) => {
                out.problems
                    .push(format!("{} line {}: {e}", path.display(), n + 1));
                continue;
            }
        };
        match line.record {
            Record::Decision {
                topic,
                decision,
                reasoning,
            } => out.decisions.push(Decision {
                topic,
                decision,
                reasoning,
                timestamp: Some(line.ts),
                source: RECORDS_FILE.into(),
            }),
            Record::Blocker {
                issue,
                status,
                notes,
            } => {
                out.blockers.retain(|b| b.issue != issue);
                let status = crate::state::blocker_status(status.as_deref().unwrap_or(""));
                out.blockers.push(Blocker {
                    issue,
                    status: status.into(),
                    notes,
                    source: RECORDS_FILE.into(),
                });
            }
            Record::Phase { name } => out.phase = Some(name),
            Record::Next {
                action,
                target,
                priority,
                needs,
            } => {
                out.next_actions.retain(|a| a.action != action);
                out.next_actions.push(NextAction {
                    action,
                    target: target.unwrap_or_default(),
                    priority: priority.unwrap_or(0),
                    context_needed: needs,
                    source: RECORDS_FILE.into(),
                });
            }
            Record::NextDone { action } => out.next_actions.retain(|a| a.action != action),
            Record::NextClear => out.next_actions.clear(),
            Record::Note { text } => out.notes.push(text),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_fold_into_the_current_picture() {
        let project = tempfile::tempdir().unwrap();
        let wf = Workflow::new(project.path());
        let d = wf.ensure(false).unwrap();
        let rec = |r: Record| append(&d, &r, Some("s1")).unwrap();
        rec(Record::Decision {
            topic: "auth".into(),
            decision: "JWT in cookies".into(),
            reasoning: Some("SSR".into()),
        });
        rec(Record::Blocker {
            issue: "flaky CI".into(),
            status: None,
            notes: None,
        });
        rec(Record::Blocker {
            issue: "flaky CI".into(),
            status: Some("resolved".into()),
            notes: Some("pinned".into()),
        });
        rec(Record::Phase {
            name: "DESIGNING".into(),
        });
        rec(Record::Phase {
            name: "IMPLEMENTING".into(),
        });
        rec(Record::Next {
            action: "write tests".into(),
            target: Some("auth".into()),
            priority: Some(1),
            needs: vec!["src/auth.rs".into()],
        });
        rec(Record::Next {
            action: "update docs".into(),
            target: None,
            priority: None,
            needs: vec![],
        });
        rec(Record::NextDone {
            action: "write tests".into(),
        });
        rec(Record::Note {
            text: "login works".into(),
        });
        std::fs::OpenOptions::new()
            .append(true)
            .open(wf.path(RECORDS_FILE))
            .map(|mut f| {
                use std::io::Write;
                writeln!(f, "{{broken").unwrap();
            })
            .unwrap();
        let r = load(&wf).unwrap();
        assert_eq!(r.decisions.len(), 1);
        assert_eq!(r.decisions[0].reasoning.as_deref(), Some("SSR"));
        assert_eq!(r.blockers.len(), 1);
        assert_eq!(r.blockers[0].status, "resolved");
        assert_eq!(r.phase.as_deref(), Some("IMPLEMENTING"));
        assert_eq!(r.next_actions.len(), 1);
        assert_eq!(r.next_actions[0].action, "update docs");
        assert_eq!(r.notes, vec!["login works"]);
        assert_eq!(r.problems.len(), 1);
        assert!(r.problems[0].contains("line 10"), "{:?}", r.problems);
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Torn and foreign lines are reported by number; good ones still count.
        #[test]
        fn any_lines_fold_without_panicking(lines in proptest::collection::vec("\\PC{0,80}", 0..30)) {
            let project = tempfile::tempdir().unwrap();
            let wf = Workflow::new(project.path());
            append(&wf.ensure(false).unwrap(), &Record::Phase { name: "KNOWN".into() }, None).unwrap();
            let mut text = std::fs::read_to_string(wf.path(RECORDS_FILE)).unwrap();
            for l in &lines {
                text.push_str(l);
                text.push('\n');
            }
            std::fs::write(wf.path(RECORDS_FILE), &text).unwrap();
            let r = load(&wf).unwrap();
            let blank = lines.iter().filter(|l| l.trim().is_empty()).count();
            prop_assert!(r.problems.len() <= lines.len() - blank);
        }
    }
}
