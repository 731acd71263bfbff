// Package workflow runs one attempt at one issue as a persisted state-machine graph:
//
//	claim → prepare_workspace → write_task → start_session → deliver_prompt → monitor ─┬→ finalize → report → done
//	                                                                ↑   ↓ question        └→ failed | cancelled
//	                                                                └ waiting_input (human answers on the issue)
//
// Every node is idempotent: it looks at what already exists (a clone, a live session, an open pull request, a
// posted status comment) before acting, so a run interrupted at any point — ace killed, the machine rebooted —
// resumes from its persisted step without repeating side effects. The run is written to the store after every
// transition, together with an event row.
//
// The monitor node is level-based: each tick looks at reality (session alive? pane dead? output activity? screen
// markers? .ace/DONE or .ace/QUESTION present? issue closed?) and decides, so it never depends on having seen
// every event.
//
// Two runners share the graph. "tmux" types into an interactive session. "exec" (headless) skips deliver_prompt:
// start_session starts the first turn of the agent's JSON-streaming CLI under a detached supervisor, and the
// monitor waits for each turn to end, then acts on .ace/DONE or .ace/QUESTION, or starts the next turn of the
// same conversation (a queued answer, a nudge, a resume after a crash). See node_exec.go.
//
// The package declares the small interfaces it needs (Store, Tracker, Workspaces, Sessions, Secrets); the
// packages that implement them return concrete types and never import workflow.
package workflow
