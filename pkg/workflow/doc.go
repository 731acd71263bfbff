// Package workflow runs one attempt at one issue as a persisted state-machine graph:
//
//	claim → prepare_workspace → write_task → start_session → deliver_prompt → monitor ─┬→ finalize → report ─┬→ done
//	                                                                ↑   ↓ ask_human       └→ failed | cancelled │
//	                                                                └ waiting_input (human answers on the issue)  │
//	                                                      follow_pr (the pull request's CI and review) ←───────────┘
//	                                                        └→ a round: deliver_prompt → monitor → finalize → report
//
// Every node is idempotent: it looks at what already exists (a clone, a live session, an open pull request, a
// posted status comment) before acting, so a run interrupted at any point — ace killed, the machine rebooted —
// resumes from its persisted step without repeating side effects. The run is written to the store after every
// transition, together with an event row.
//
// The monitor node is level-based: each tick looks at reality (session alive? pane dead? output activity? screen
// markers? .ace/DONE or .ace/QUESTION present? issue closed?) and decides, so it never depends on having seen
// every event. A usage limit is decided on there too (limits_decide.go: pause, fall back, resume): a run handed
// to a fallback agent goes through handover (node_handover.go) to start_session with the new agent.
//
// Three runners share the graph (runner.go, one Runner interface): "tmux" (runner_tmux*.go) types into the
// agent's interactive session and reads its screen; "exec" (runner_exec*.go, headless) skips deliver_prompt:
// start_session starts the first turn of the agent's JSON-streaming CLI under a detached supervisor, and the
// monitor waits for each turn to end, then acts on .ace/DONE or .ace/QUESTION, or starts the next turn of the
// same conversation; "live" (runner_live*.go) keeps the CLI's own protocol open in a host process (pkg/livehost)
// in a tmux pane, sending each message into the running conversation. The tmux and the live runner hold the
// agents' tmux sessions together (runner_panes.go). A runner acts on its agent only: a usage limit it saw, a human
// its agent waits for, it reports in its Result, and the node that called it decides (Engine.reported, step.go).
// Liveness (liveness*.go) reads what the agent does — its model traffic, its transcript, the CPU of its process
// tree, its working copy — for every runner; slots (slots.go) say who may have an agent alive; the box (package
// runbox, through the engine's box field) is where each agent process runs.
//
// The package declares the small interfaces it needs (Store, Tracker, Workspaces, Sessions, Secrets); the
// packages that implement them return concrete types and never import workflow.
package workflow
