package workflow

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// TestDecideLimit: what is done about a usage limit, from the run, what its runner saw, the settings and the
// other agents' limits.
func TestDecideLimit(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	limits := config.LimitsConfig{Backoff: config.D(time.Minute), MaxBackoff: config.D(time.Hour), ResumeMargin: config.D(30 * time.Second)}
	noFallback := config.AgentDefaults{}
	fallback := config.AgentDefaults{Fallback: []string{"claude", "codex", "gemini"}, FallbackAfter: config.D(10 * time.Minute)}
	saw := func(reset time.Time) *limitReport {
		return &limitReport{Limit: agents.Limit{Message: "Usage limit reached", ResetsAt: reset}, Seen: 2}
	}
	active := func(mod ...func(*store.Run)) *store.Run {
		r := &store.Run{ID: 1, Agent: "claude", Status: store.StatusActive}
		for _, m := range mod {
			m(r)
		}
		return r
	}
	paused := func(until time.Time, mod ...func(*store.Run)) *store.Run {
		return active(append([]func(*store.Run){func(r *store.Run) {
			r.Status, r.State.ResumeAt = store.StatusPausedLimit, until
			r.State.Limit = &store.LimitState{Message: "Usage limit reached", Seen: 3}
		}}, mod...)...)
	}
	pauses := func(n int) func(*store.Run) {
		return func(r *store.Run) { r.State.Limit = &store.LimitState{Pauses: n, Seen: 1} }
	}
	had := func(agent string) func(*store.Run) {
		return func(r *store.Run) {
			r.State.Fallback = &store.FallbackState{Handovers: []store.Handover{{From: agent, To: "claude"}}}
		}
	}

	cases := []struct {
		name   string
		run    *store.Run
		report *limitReport
		agent  config.AgentDefaults
		others map[string]agentLimit
		want   limitDecision
	}{
		{name: "nothing", run: active(), agent: fallback,
			want: limitDecision{Act: limitNone}},
		{name: "another agent at a limit", run: active(), others: map[string]agentLimit{"codex": {Until: at(time.Hour)}},
			want: limitDecision{Act: limitNone}},
		{name: "the agent's limit by another run has passed", run: active(), others: map[string]agentLimit{"claude": {Until: at(-time.Second)}},
			want: limitDecision{Act: limitNone}},
		{name: "reset known: pause until it, with the margin", run: active(), report: saw(at(time.Hour)),
			want: limitDecision{Act: limitPause, Until: at(time.Hour + 30*time.Second), Wait: time.Hour + 30*time.Second,
				Limit: agents.Limit{Message: "Usage limit reached", ResetsAt: at(time.Hour)}, Seen: 2}},
		{name: "reset unknown: the backoff", run: active(), report: saw(time.Time{}),
			want: limitDecision{Act: limitPause, Until: at(time.Minute), Wait: time.Minute, Backoff: true,
				Limit: agents.Limit{Message: "Usage limit reached"}, Seen: 2}},
		{name: "reset passed (a resume refused again): the backoff, doubled for each pause in a row", run: active(pauses(2)),
			report: saw(at(-time.Minute)),
			want: limitDecision{Act: limitPause, Until: at(4 * time.Minute), Wait: 4 * time.Minute, Backoff: true,
				Limit: agents.Limit{Message: "Usage limit reached", ResetsAt: at(-time.Minute)}, Seen: 2}},
		{name: "the backoff capped", run: active(pauses(9)), report: saw(time.Time{}),
			want: limitDecision{Act: limitPause, Until: at(time.Hour), Wait: time.Hour, Backoff: true,
				Limit: agents.Limit{Message: "Usage limit reached"}, Seen: 2}},
		{name: "a reset within the margin of now", run: active(), report: saw(at(-10 * time.Second)),
			want: limitDecision{Act: limitPause, Until: at(20 * time.Second), Wait: 20 * time.Second,
				Limit: agents.Limit{Message: "Usage limit reached", ResetsAt: at(-10 * time.Second)}, Seen: 2}},
		{name: "the agent at a limit by another run: shared, no margin", run: active(pauses(0)),
			others: map[string]agentLimit{"claude": {Until: at(time.Hour), Message: "theirs"}},
			want: limitDecision{Act: limitPause, Until: at(time.Hour), Wait: time.Hour, Shared: true,
				Limit: agents.Limit{Message: "theirs"}, Seen: 1}},
		{name: "fallback: reset far, the first agent free takes the run", run: active(), report: saw(at(3 * time.Hour)), agent: fallback,
			want: limitDecision{Act: limitFallBack, To: "codex", Until: at(3*time.Hour + 30*time.Second),
				Wait: time.Minute, Limit: agents.Limit{Message: "Usage limit reached", ResetsAt: at(3 * time.Hour)}, Seen: 2}},
		{name: "fallback: reset near, the run pauses", run: active(), report: saw(at(5 * time.Minute)), agent: fallback,
			want: limitDecision{Act: limitPause, Until: at(5*time.Minute + 30*time.Second), Wait: 5*time.Minute + 30*time.Second,
				Limit: agents.Limit{Message: "Usage limit reached", ResetsAt: at(5 * time.Minute)}, Seen: 2}},
		{name: "fallback: agents at a limit or had, the run pauses and says why", run: active(had("codex")),
			report: saw(at(3 * time.Hour)), agent: fallback, others: map[string]agentLimit{"gemini": {Until: at(4 * time.Hour)}},
			want: limitDecision{Act: limitPause, Until: at(3*time.Hour + 30*time.Second), Wait: time.Minute,
				Limit: agents.Limit{Message: "Usage limit reached", ResetsAt: at(3 * time.Hour)}, Seen: 2,
				NoFallback: []string{"claude has had the run", "codex has had the run", "gemini is at a usage limit until 2025-06-01T16:00:00Z"}}},
		{name: "fallback: an agent that does not resolve is passed over", run: active(had("gemini")), report: saw(at(3 * time.Hour)),
			agent: config.AgentDefaults{Fallback: []string{"broken", "gemini"}, FallbackAfter: config.D(time.Minute)},
			want: limitDecision{Act: limitPause, Until: at(3*time.Hour + 30*time.Second), Wait: time.Minute,
				Limit: agents.Limit{Message: "Usage limit reached", ResetsAt: at(3 * time.Hour)}, Seen: 2,
				NoFallback: []string{"broken: no such agent", "gemini has had the run"}}},
		{name: "fallback: a shared limit far away goes to another agent too", run: active(), agent: fallback,
			others: map[string]agentLimit{"claude": {Until: at(2 * time.Hour)}},
			want:   limitDecision{Act: limitFallBack, To: "codex", Until: at(2 * time.Hour), Wait: time.Minute, Shared: true}},
		{name: "paused: the agent back after the reset", run: paused(at(-time.Second)), agent: fallback,
			want: limitDecision{Act: limitResume}},
		{name: "paused: the reset now", run: paused(now), want: limitDecision{Act: limitResume}},
		{name: "paused: waits for the reset", run: paused(at(time.Hour)), agent: noFallback,
			want: limitDecision{Act: limitPause, Until: at(time.Hour), Paused: true, Wait: time.Hour,
				Limit: agents.Limit{Message: "Usage limit reached"}, Seen: 3}},
		{name: "paused: a fallback agent free again takes the run", run: paused(at(time.Hour)), agent: fallback,
			want: limitDecision{Act: limitFallBack, To: "codex", Until: at(time.Hour), Paused: true, Wait: time.Minute,
				Limit: agents.Limit{Message: "Usage limit reached"}, Seen: 3}},
		{name: "paused: none free, it looks again every limits.backoff while the reset is far", run: paused(at(time.Hour)),
			agent: fallback, others: map[string]agentLimit{"codex": {Until: at(2 * time.Hour)}, "gemini": {Until: at(2 * time.Hour)}},
			want: limitDecision{Act: limitPause, Until: at(time.Hour), Paused: true, Wait: time.Minute,
				Limit: agents.Limit{Message: "Usage limit reached"}, Seen: 3,
				NoFallback: []string{"claude has had the run", "codex is at a usage limit until 2025-06-01T14:00:00Z",
					"gemini is at a usage limit until 2025-06-01T14:00:00Z"}}},
		{name: "paused: a reset within fallback_after waits for it", run: paused(at(5 * time.Minute)), agent: fallback,
			want: limitDecision{Act: limitPause, Until: at(5 * time.Minute), Paused: true, Wait: 5 * time.Minute,
				Limit: agents.Limit{Message: "Usage limit reached"}, Seen: 3}},
	}
	usable := func(agent string) error {
		if agent == "broken" {
			return errors.New("no such agent")
		}
		return nil
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := decideLimit(limitCase{Run: c.run, Report: c.report, Now: now, Limits: limits, Agent: c.agent,
				Others: c.others, Usable: usable})
			if !sameDecision(got, c.want) {
				t.Errorf("decideLimit\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func sameDecision(a, b limitDecision) bool {
	return a.Act == b.Act && a.Until.Equal(b.Until) && a.To == b.To && a.Limit.Message == b.Limit.Message &&
		a.Limit.ResetsAt.Equal(b.Limit.ResetsAt) && a.Seen == b.Seen && a.Shared == b.Shared && a.Backoff == b.Backoff &&
		a.Paused == b.Paused && a.Wait == b.Wait && strings.Join(a.NoFallback, "; ") == strings.Join(b.NoFallback, "; ")
}

// TestResumeAt: a pause ends in whole seconds, never before the reset.
func TestResumeAt(t *testing.T) {
	reset := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[time.Time]time.Time{reset: reset, reset.Add(time.Millisecond): reset.Add(time.Second),
		reset.Add(999 * time.Millisecond): reset.Add(time.Second)} {
		if got := resumeAt(in); !got.Equal(want) {
			t.Errorf("resumeAt(%v) = %v, want %v", in, got, want)
		}
	}
}
