//! Claude Code's statusLine requests: the session's window and figure from
//! its input, and hookd's view of its context in return.

use super::{Engine, context_of, empty_context};
use crate::harness::statusline;
use crate::session_machine;
use crate::sessions::{Session, SessionKey};
use crate::time::now_ms;
use protocol::wire::{ErrorKind, ErrorReply, Response, StatusLineRequest};
use serde_json::Value;

impl Engine {
    /// Claude Code's statusLine: note the window it names, answer with our view.
    pub(super) fn statusline(&self, request: StatusLineRequest) -> Response {
        let Ok(input) = serde_json::from_str::<Value>(request.payload.get()) else {
            return Response::Error(ErrorReply::new(
                ErrorKind::BadPayload,
                "the statusLine input is not JSON",
            ));
        };
        let statusline::Input {
            session_id,
            window,
            tokens,
            model,
            project,
            transcript,
        } = statusline::parse(&input);
        // The project is the repository holding the directory named, as for hooks.
        let working_dir = project;
        let project = working_dir.as_deref().map(protocol::project::project_root);
        let (config, _) = self.settings.for_request(project.as_deref(), &request.env);
        let now = now_ms();
        let knobs = protocol::pressure::Knobs::from_env(|name| request.env.get(name).cloned());
        let input = session_machine::StatusLine {
            window,
            tokens,
            model,
            project,
            working_dir,
            transcript,
            knobs,
        };
        // Only hooks make a session: a statusLine input alone (someone
        // trying the command by hand) is answered from itself and kept
        // nowhere.
        let key = SessionKey {
            harness: statusline::HARNESS,
            id: session_id.unwrap_or_default(),
        };
        let mut registry = self.registry();
        let mut scratch;
        let (session, known) = match registry.get_mut(&key) {
            Some(session) => (session, true),
            None => {
                scratch = Session::new(key, now);
                (&mut scratch, false)
            }
        };
        session_machine::on_statusline(session, input, now);
        if known {
            self.note_read_point(session);
        }
        let context = context_of(session, &config.config)
            .unwrap_or_else(|| empty_context(session, &config.config));
        drop(registry);
        self.touch();
        Response::Context(Box::new(context))
    }
}
