//! Context transitions: each compaction and each injected resume
//! prompt goes to `.workflow/events.jsonl` as a `context_transition` with
//! its size before and after and the compression ratio; the context report
//! totals them.

use crate::events::{LogEvent, ReadLine, Resume, Transition};
use crate::harness::StartSource;
use protocol::budget::{RESUMES_REPORTED, ResumeOutcome, TransitionTotals};
use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;

/// Totals of the events in `events_file` (of `session`, when given). Bad
/// lines and kinds this hookd does not know are counted by kind and
/// otherwise skipped: the file is a log, not a contract.
pub fn totals(events_file: &Path, session: Option<&str>) -> std::io::Result<TransitionTotals> {
    let file = match std::fs::File::open(events_file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(TransitionTotals::default());
        }
        Err(e) => return Err(e),
    };
    let mut t = TransitionTotals::default();
    let mut boundaries = HashSet::new();
    for line in std::io::BufReader::new(file).split(b'\n') {
        let Some(line) = LogEvent::read(&line?) else {
            continue;
        };
        if let Some(id) = session
            && !line.session.as_deref().is_some_and(|s| s.starts_with(id))
        {
            continue;
        }
        let Some(kind) = &line.kind else {
            continue;
        };
        *t.events_by_kind.entry(kind.clone()).or_insert(0) += 1;
        // events.jsonl is a file anyone may edit: totals saturate, never wrap.
        match &line.event {
            LogEvent::ContextTransition(Transition::Compaction {
                before_tokens,
                after_tokens,
                boundary,
                ..
            }) => {
                // A transcript read again from its start names old boundaries again.
                if let Some(uuid) = boundary
                    && !boundaries.insert(uuid.clone())
                {
                    continue;
                }
                t.compactions += 1;
                t.compacted_before_tokens =
                    t.compacted_before_tokens.saturating_add(*before_tokens);
                t.compacted_after_tokens = t.compacted_after_tokens.saturating_add(*after_tokens);
            }
            LogEvent::ContextTransition(Transition::Resume {
                before_tokens,
                after_tokens,
                ..
            }) => {
                t.resumes += 1;
                t.resume_markdown_tokens = t.resume_markdown_tokens.saturating_add(*before_tokens);
                t.resume_tokens = t.resume_tokens.saturating_add(*after_tokens);
            }
            LogEvent::Resume(_)
            | LogEvent::ResumeArrival { .. }
            | LogEvent::ResumeFollowed { .. } => {
                resume_outcome(&mut t.resumes_followed, &line);
            }
            _ => {}
        }
    }
    let excess = t.resumes_followed.len().saturating_sub(RESUMES_REPORTED);
    t.resumes_followed.drain(..excess);
    t.compaction_ratio =
        crate::events::compression_ratio(t.compacted_before_tokens, t.compacted_after_tokens);
    t.format_ratio = crate::events::compression_ratio(t.resume_markdown_tokens, t.resume_tokens);
    Ok(t)
}

/// Takes in a `resume` line (a compaction's prompt, injected, not yet
/// decided), a `resume_arrival` line (one lost for good) or a
/// `resume_followed` line (the verdict on the prompt with its marker).
fn resume_outcome(list: &mut Vec<ResumeOutcome>, line: &ReadLine) {
    let known_epoch = |epoch: u32| Some(epoch).filter(|e| *e > 0);
    match &line.event {
        LogEvent::ResumeArrival {
            marker,
            arrived: false,
            action,
            ..
        } if action == crate::events::NEVER_ARRIVED => {
            // Lost for good: nothing will judge it.
            if let Some(entry) = list.iter_mut().find(|r| r.marker == *marker) {
                entry.lost = true;
            }
        }
        // Only a compaction's prompt is judged (a plain `--resume` has no
        // compaction); one injected again keeps its marker: one entry.
        LogEvent::Resume(Resume::Injected {
            source,
            epoch,
            injected: true,
            marker,
            ..
        }) if *source == StartSource::Compact && !list.iter().any(|r| r.marker == *marker) => {
            list.push(ResumeOutcome {
                session: line.session.clone(),
                epoch: known_epoch(*epoch),
                marker: marker.clone(),
                followed: None,
                detail: None,
                lost: false,
            });
        }
        LogEvent::ResumeFollowed {
            epoch,
            marker,
            followed,
            matched,
            first_call,
            ..
        } => {
            let detail = matched.clone().or_else(|| {
                let tool = first_call.tool.as_str();
                (!tool.is_empty()).then(|| match &first_call.target {
                    Some(target) => format!("{tool} {target}"),
                    None => tool.to_owned(),
                })
            });
            let at = match list.iter().position(|r| r.marker == *marker) {
                Some(at) => at,
                None => {
                    list.push(ResumeOutcome {
                        session: line.session.clone(),
                        epoch: known_epoch(*epoch),
                        marker: marker.clone(),
                        ..ResumeOutcome::default()
                    });
                    list.len() - 1
                }
            };
            let entry = &mut list[at];
            entry.followed = Some(*followed);
            entry.detail = detail;
            entry.epoch = entry.epoch.or(known_epoch(*epoch));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn transitions_are_totalled_once_per_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("events.jsonl");
        let key = |id: &str| crate::sessions::SessionKey {
            harness: protocol::wire::Harness::ClaudeCode,
            id: id.into(),
        };
        let line = |session: &str, transition: Transition| {
            LogEvent::ContextTransition(transition).line("x", Some(&key(session)))
        };
        let compaction = |trigger, before, after, boundary: &str| {
            Transition::compaction(trigger, before, after, Some(boundary.into()))
        };
        let lines = [
            line("s1", compaction("auto", 160_000, 20_000, "b1")),
            line("s1", compaction("auto", 160_000, 20_000, "b1")),
            line("s2", compaction("manual", 40_000, 10_000, "b2")),
            line("s1", Transition::resume("yaml", 1000, 400, "m".into())),
            "not json".to_owned(),
            json!({"ts": "x", "kind": "pipeline", "session": "s1"}).to_string(),
        ];
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        let all = totals(&file, None).unwrap();
        assert_eq!(
            (
                all.compactions,
                all.compacted_before_tokens,
                all.compacted_after_tokens
            ),
            (2, 200_000, 30_000)
        );
        assert_eq!(all.compaction_ratio, Some(0.85));
        assert_eq!((all.resumes, all.format_ratio), (1, Some(0.6)));
        assert_eq!(all.events_by_kind.get("context_transition"), Some(&4));
        assert_eq!(all.events_by_kind.get("pipeline"), Some(&1));
        let s2 = totals(&file, Some("s2")).unwrap();
        assert_eq!((s2.compactions, s2.compaction_ratio), (1, Some(0.75)));
        assert_eq!(
            totals(&dir.path().join("none"), None).unwrap(),
            TransitionTotals::default()
        );
    }

    #[test]
    fn each_resume_prompt_is_reported_with_whether_it_was_followed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("events.jsonl");
        let lines = [
            json!({"kind": "resume", "source": "compact", "session": "s1", "epoch": 2, "injected": true, "marker": "[m1]"}),
            json!({"kind": "resume_followed", "session": "s1", "epoch": 2, "marker": "[m1]", "followed": true, "matched": "Read notes/a.md (named notes/a.md)"}),
            json!({"kind": "resume", "source": "compact", "session": "s1", "epoch": 3, "injected": true, "marker": "[m2]"}),
            json!({"kind": "resume_followed", "session": "s1", "epoch": 3, "marker": "[m2]", "followed": false, "matched": null, "first_call": {"tool": "Bash", "target": "ls /tmp"}}),
            json!({"kind": "resume", "source": "compact", "session": "s1", "epoch": 4, "injected": true, "marker": "[m3]"}),
            json!({"kind": "resume", "session": "s1", "injected": false, "reason": "no saved state"}),
            json!({"kind": "resume_followed", "session": "s1", "marker": 7, "followed": true}),
            // A plain `--resume` is never judged: not listed.
            json!({"kind": "resume", "source": "resume", "session": "s1", "epoch": 4, "injected": true, "marker": "[m4]"}),
            // Lost for good: said so, never "not yet decided".
            json!({"kind": "resume", "source": "compact", "session": "s1", "epoch": 5, "injected": true, "marker": "[m5]"}),
            json!({"kind": "resume_arrival", "session": "s1", "marker": "[m5]", "arrived": false, "action": "injected again"}),
            json!({"kind": "resume_arrival", "session": "s1", "marker": "[m5]", "arrived": false, "action": crate::events::NEVER_ARRIVED}),
        ];
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(&file, text.join("\n") + "\n").unwrap();
        let outcomes: Vec<(Option<u32>, &str, Option<String>)> = totals(&file, None)
            .unwrap()
            .resumes_followed
            .iter()
            .map(|r| (r.epoch, r.words(), r.detail.clone()))
            .collect();
        assert_eq!(
            outcomes,
            [
                (
                    Some(2),
                    "resumed and followed",
                    Some("Read notes/a.md (named notes/a.md)".into())
                ),
                (
                    Some(3),
                    "resumed, went elsewhere",
                    Some("Bash ls /tmp".into())
                ),
                (Some(4), "resumed, not yet decided", None),
                (Some(5), "resumed, never arrived", None),
            ]
        );
    }
}
