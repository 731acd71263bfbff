package store

import (
	"context"
	"reflect"
	"testing"
	"time"
)

func TestRunStateRoundTripsTyped(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testRunStateRoundTripsTyped)
}

func testRunStateRoundTripsTyped(t *testing.T, fresh func(*testing.T) target) {
	ctx := context.Background()
	s := openAt(t, fresh(t))
	at := time.Date(2025, 3, 4, 5, 6, 7, 890, time.UTC)
	want := RunState{Title: "Fix it", Model: "m", Labeled: true, Retries: 2,
		MonitorSince: at, Questions: 3, QuestionAt: at, Question: "which?",
		AgentState: AgentState{PromptDelivered: true, NudgedAt: at.Add(time.Nanosecond), CompactAt: 0, HasCompactAt: true},
		ExecState:  ExecState{ExecTurn: 4, ExecSeen: 3, Transcript: "t.jsonl"}}
	r := &Run{Repo: "o/r", Issue: 1, Attempt: 1, Agent: "codex", Step: "monitor", Status: StatusActive, State: want}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.State, want) {
		t.Fatalf("state read back\n got %+v\nwant %+v", got.State, want)
	}
	got.State = RunState{}
	if err := s.UpdateRun(ctx, got, nil); err != nil {
		t.Fatal(err)
	}
	var raw string
	if err := s.db.QueryRowContext(ctx, "SELECT state FROM runs WHERE id=?", r.ID).Scan(&raw); err != nil || raw != "{}" {
		t.Fatalf("an empty state is stored as %q (%v), want {}", raw, err)
	}
}

// TestTimesOrderExactlyWithinASecond: version 1 kept RFC 3339 text with trailing zeros trimmed, so a whole second
// ("…:05Z") compared after its own fractions ("…:05.5Z").
func TestTimesOrderExactlyWithinASecond(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testTimesOrderExactlyWithinASecond)
}

func testTimesOrderExactlyWithinASecond(t *testing.T, fresh func(*testing.T) target) {
	ctx := context.Background()
	whole := time.Date(2025, 1, 1, 0, 0, 5, 0, time.UTC)
	now := whole
	s := openAt(t, fresh(t), WithClock(func() time.Time { return now }))
	now = whole.Add(500 * time.Millisecond)

	r := &Run{Repo: "o/r", Issue: 1, Attempt: 1, Agent: "x", Step: "claim", Status: StatusActive}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if !r.CreatedAt.Equal(now) || !r.TriggeredAt.Equal(now) {
		t.Fatalf("run stamped %v / %v, want the store's clock %v", r.CreatedAt, r.TriggeredAt, now)
	}
	times := []time.Time{whole.Add(500 * time.Millisecond), whole, whole.Add(time.Nanosecond), whole.Add(250 * time.Millisecond)}
	for _, at := range times {
		if err := s.AppendEvent(ctx, r.ID, Event{Kind: "tick", Time: at}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.db.QueryContext(ctx, "SELECT time FROM events WHERE run_id=? ORDER BY time", r.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []time.Time
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, fromNanos(n))
	}
	want := []time.Time{whole, whole.Add(time.Nanosecond), whole.Add(250 * time.Millisecond), whole.Add(500 * time.Millisecond)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events ordered by time: %v, want %v", got, want)
	}
	evs, err := s.Events(ctx, r.ID)
	if err != nil || len(evs) != 4 || !evs[2].Time.Equal(whole.Add(time.Nanosecond)) {
		t.Fatalf("events read back %+v, %v", evs, err)
	}
}
