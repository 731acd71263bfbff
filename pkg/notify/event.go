// Package notify tells people about runs that need them: each [[notify]] receiver (a generic JSON webhook, a
// Slack incoming webhook, an ntfy topic) gets one message per event, sent from a queue and a goroutine of its
// own, retried with backoff. A slow or failing receiver loses messages (counted); it never delays a run.
package notify

import (
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/workflow"
)

// The events a receiver may ask for (config.NotifyEvents).
const (
	NeedsInput = "needs-input"
	Failed     = "failed"
	PROpened   = "pr-opened"
	PRMerged   = "pr-merged"
	Paused     = "paused"
)

// Message is one notification, as the generic webhook receives it (JSON).
type Message struct {
	Event   string    `json:"event"`
	Repo    string    `json:"repo"`
	Issue   int       `json:"issue"`
	RunID   int64     `json:"run_id"`
	Title   string    `json:"title,omitempty"`
	Agent   string    `json:"agent,omitempty"`
	Status  string    `json:"status"`
	Step    string    `json:"step"`
	Text    string    `json:"text"`
	PRURL   string    `json:"pr_url,omitempty"`
	Link    string    `json:"link,omitempty"` // the run on the dashboard, when it is served
	Time    time.Time `json:"time"`
	Details string    `json:"details,omitempty"`
}

// Classify says which notification a run event is, if any.
func Classify(p workflow.Progress) (string, bool) {
	switch {
	case p.Kind == workflow.EventQuestion:
		return NeedsInput, true
	case p.Kind == workflow.EventStep && p.Step == workflow.StepFailed:
		return Failed, true
	case p.Kind == workflow.EventPullRequest:
		return PROpened, true
	// The engine's follow_pr and usage-limit steps publish these kinds by the event's own name.
	case p.Kind == PRMerged, p.Kind == Paused:
		return string(p.Kind), true
	}
	return "", false
}

// newMessage builds the notification of event from a run event.
func newMessage(event string, p workflow.Progress, link string, now time.Time) Message {
	m := Message{Event: event, Step: string(p.Step), Details: p.Message, Link: link, Time: now}
	if r := p.Run; r != nil {
		m.Repo, m.Issue, m.RunID, m.Title, m.Agent = r.Repo, r.Issue, r.ID, r.State.Title, r.Agent
		m.Status, m.PRURL = string(r.Status), r.PRURL
		if event == Failed && m.Details == "" {
			m.Details = r.Error
		}
		if event == NeedsInput && r.State.Question != "" {
			m.Details = r.State.Question
		}
	}
	what := map[string]string{
		NeedsInput: "needs input", Failed: "failed", PROpened: "opened a pull request",
		PRMerged: "pull request merged", Paused: "paused at a usage limit",
	}[event]
	m.Text = fmt.Sprintf("ace: %s#%d %s", m.Repo, m.Issue, what)
	if m.Title != "" {
		m.Text += fmt.Sprintf(" (%s)", m.Title)
	}
	return m
}
