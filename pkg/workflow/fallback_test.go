package workflow

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// TestPickFallback: the first agent of the list that is not the run's, has not had the run, resolves and is not
// at a limit; a store error ends the choice.
func TestPickFallback(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	r := &store.Run{Agent: "codex", State: store.RunState{Fallback: &store.FallbackState{
		Handovers: []store.Handover{{From: "claude", To: "codex"}}}}}
	limited := map[string]time.Time{"gemini": now.Add(time.Hour), "old": now.Add(-time.Minute)}
	usable := func(a string) error {
		if a == "broken" {
			return errors.New("no such agent")
		}
		return nil
	}
	until := func(a string) (time.Time, error) { return limited[a], nil }

	cases := []struct {
		list    []string
		want    string
		skipped string
	}{
		{[]string{"codex", "claude", "broken", "gemini", "old", "mine"}, "old",
			"codex has had the run; claude has had the run; broken: no such agent; gemini is at a usage limit until 2025-06-01T13:00:00Z"},
		{[]string{"claude", "gemini"}, "", "claude has had the run; gemini is at a usage limit until 2025-06-01T13:00:00Z"},
		{nil, "", ""},
	}
	for _, c := range cases {
		got, skipped, err := pickFallback(c.list, r, now, usable, until)
		if err != nil || got != c.want || strings.Join(skipped, "; ") != c.skipped {
			t.Errorf("pickFallback(%v) = %q, %q, %v; want %q, %q", c.list, got, skipped, err, c.want, c.skipped)
		}
	}
	boom := errors.New("store away")
	if _, _, err := pickFallback([]string{"mine"}, r, now, usable, func(string) (time.Time, error) { return time.Time{}, boom }); !errors.Is(err, boom) {
		t.Errorf("a store error: %v, want it returned", err)
	}
}

// TestLeftAtLimit: a run that fell back from an agent at a limit it hit itself says so, the handover it is about
// to make included; one that left with a shared limit does not, nor one that never fell back.
func TestLeftAtLimit(t *testing.T) {
	t1, t2, t3 := time.Unix(1000, 0), time.Unix(2000, 0), time.Unix(3000, 0)
	o := &store.Run{State: store.RunState{Fallback: &store.FallbackState{Handovers: []store.Handover{
		{From: "claude", To: "codex", Until: t1, Message: "first"},
		{From: "codex", To: "gemini", Until: t2, Shared: true},
		{From: "claude", To: "gemini", Until: t2, Message: "second"},
	}, Pending: &store.Handover{From: "gemini", To: "qwen", Until: t3}}}}
	var got []string
	for _, h := range leftAtLimit(o) {
		got = append(got, h.From+" "+h.Message)
	}
	if want := []string{"claude first", "claude second", "gemini "}; strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("left at a limit: %q, want %q (the shared one left out)", got, want)
	}
	if left := leftAtLimit(&store.Run{}); len(left) != 0 {
		t.Errorf("a run without handovers: %v", left)
	}
}

// TestUsageKeepsEarlierAgents: an agent's own records start at zero after a handover; the run's usage adds what
// the agents before it spent.
func TestUsageKeepsEarlierAgents(t *testing.T) {
	u := &store.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.5}
	if got := withEarlierAgents(&store.Run{}, u); got != u {
		t.Errorf("no handover: %+v", got)
	}
	r := &store.Run{State: store.RunState{Fallback: &store.FallbackState{Handovers: []store.Handover{
		{From: "a", To: "b", Usage: &store.Usage{InputTokens: 1}},
		{From: "b", To: "c", Usage: &store.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 3, CacheWriteTokens: 4, CostUSD: 1}},
	}}}}
	want := store.Usage{InputTokens: 110, OutputTokens: 22, CacheReadTokens: 3, CacheWriteTokens: 4, CostUSD: 1.5}
	if got := withEarlierAgents(r, u); *got != want {
		t.Errorf("after two handovers: %+v, want %+v", *got, want)
	}
}

// TestHandOverResetsTheOldAgentsState: what belonged to the old agent goes; the working copy, branch, status
// comment and usage stay.
func TestHandOverResetsTheOldAgentsState(t *testing.T) {
	r := &store.Run{Session: "ace-w-1", AgentSessionID: "s1", Workdir: "/w", Branch: "b", StatusCommentID: 7, Nudges: 2, Restarts: 1,
		State: store.RunState{Model: "opus", Limit: &store.LimitState{Seen: 2}, ResumeAt: time.Unix(5, 0),
			AgentState: store.AgentState{PromptDelivered: true, CompactAt: 9, HasCompactAt: true},
			ExecState:  store.ExecState{ExecTurn: 3, ExecSeen: 3, ExecPending: "answer", Transcript: "t.jsonl", ExecFormat: "claude"},
			Usage:      &store.Usage{OutputTokens: 5}, Summary: "kept"}}
	handOver(r)
	s := r.State
	if r.Session != "" || r.AgentSessionID != "" || r.Nudges != 0 || r.Restarts != 0 || s.Model != "" || s.PromptDelivered ||
		!s.Resume || s.ExecTurn != 0 || s.ExecSeen != 0 || s.ExecPending != "" || s.Transcript != "" || s.ExecFormat != "" ||
		s.Limit != nil || !s.ResumeAt.IsZero() || s.HasCompactAt {
		t.Errorf("after handOver: %+v", r)
	}
	if r.Workdir != "/w" || r.Branch != "b" || r.StatusCommentID != 7 || s.Usage == nil || s.Summary != "kept" {
		t.Errorf("handOver dropped what the run keeps: %+v", r)
	}
}
