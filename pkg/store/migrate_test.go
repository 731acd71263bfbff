package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// writeV1Store writes a store as ace with schema version 1 left it: RFC 3339 text times, a vars map, and an id
// counter above the highest run (a run was deleted).
func writeV1Store(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmts := []string{schemaV1, "PRAGMA user_version = 1",
		`INSERT INTO runs (id, repo, issue, attempt, agent, runner, step, status, session, vars, version, triggered_at,
			created_at, updated_at, finished_at) VALUES
			(1, 'acme/widgets', 7, 1, 'codex', 'tmux', 'waiting_input', 'waiting_input', 'ace-7',
			 '{"title":"Fix it","prompt_delivered":"1","monitor_since":"2025-01-01T00:00:05.5Z","question_at":"2025-01-01T00:00:06Z",
			   "question":"which?","questions":",,","compact_at":"0","retries":"2","labeled":"1","nudged_at":"bad","unknown":"x"}',
			 4, '2025-01-01T00:00:05Z', '2025-01-01T00:00:05.000000001Z', '2025-01-01T00:00:06.25Z', NULL),
			(2, 'acme/widgets', 8, 1, 'claude', 'exec', 'done', 'done', '',
			 '{"exec_proc":"123:456","exec_turn":"3","exec_seen":"2","exec_format":"claude","transcript":"/t.jsonl"}',
			 9, '2025-01-01T00:00:07Z', '2025-01-01T00:00:07Z', '2025-01-01T00:01:00Z', '2025-01-01T00:01:00.123456789Z')`,
		`INSERT INTO events (run_id, time, kind, message) VALUES (1, '2025-01-01T00:00:05.5Z', 'transition', 'later'),
			(1, '2025-01-01T00:00:05Z', 'created', 'first'), (2, '2025-01-01T00:01:00Z', 'done', '')`,
		`INSERT INTO claims (repo, issue, owner, expires_at) VALUES ('acme/widgets', 7, 'host-1', '2025-01-01T00:10:00.5Z')`,
		`UPDATE sqlite_sequence SET seq = 5 WHERE name = 'runs'`,
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestMigratesAVersion1Store(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ace.db")
	writeV1Store(t, path)
	s := open(t, path)
	sec := func(s, ns int) time.Time { return time.Date(2025, 1, 1, 0, 0, s, ns, time.UTC) }

	r1, err := s.GetRun(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := RunState{Title: "Fix it", MonitorSince: sec(5, 5e8), QuestionAt: sec(6, 0),
		Question: "which?", Questions: 2, Retries: 2, Labeled: true,
		AgentState: AgentState{PromptDelivered: true, CompactAt: 0, HasCompactAt: true}}
	if !reflect.DeepEqual(r1.State, want) {
		t.Fatalf("run 1 state\n got %+v\nwant %+v", r1.State, want)
	}
	if !r1.TriggeredAt.Equal(sec(5, 0)) || !r1.CreatedAt.Equal(sec(5, 1)) || !r1.UpdatedAt.Equal(sec(6, 25e7)) ||
		r1.FinishedAt != nil || r1.Version != 4 || r1.Session != "ace-7" || r1.Status != StatusWaitingInput {
		t.Fatalf("run 1 read back %+v", r1)
	}
	r2, err := s.LatestRun(ctx, "acme/widgets", 8)
	if err != nil {
		t.Fatal(err)
	}
	if r2.State.ExecProc != "123:456" || r2.State.ExecTurn != 3 || r2.State.ExecSeen != 2 || r2.State.Transcript != "/t.jsonl" ||
		r2.FinishedAt == nil || !r2.FinishedAt.Equal(time.Date(2025, 1, 1, 0, 1, 0, 123456789, time.UTC)) {
		t.Fatalf("run 2 read back %+v", r2)
	}

	evs, err := s.Events(ctx, 1)
	if err != nil || len(evs) != 2 || evs[0].Message != "later" || !evs[0].Time.Equal(sec(5, 5e8)) || !evs[1].Time.Equal(sec(5, 0)) {
		t.Fatalf("run 1 events after migration %+v, %v", evs, err)
	}
	var claims int
	if err := s.DB().QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name='claims'").Scan(&claims); err != nil || claims != 0 {
		t.Fatalf("the claims table is still there (%d, %v): River's unique jobs replaced it", claims, err)
	}

	// A deleted run's id is not handed out again.
	r3 := &Run{Repo: "acme/widgets", Issue: 9, Attempt: 1, Agent: "x", Step: "claim", Status: StatusActive}
	if err := s.CreateRun(ctx, r3); err != nil || r3.ID != 6 {
		t.Fatalf("new run id %d (%v), want 6", r3.ID, err)
	}
	// Foreign keys hold again after the migration turned them off.
	if err := s.AppendEvent(ctx, 99, Event{Kind: "x"}); err == nil {
		t.Fatal("an event of a run that does not exist was accepted: foreign keys are off")
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM runs WHERE id=2"); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.Events(ctx, 2); len(evs) != 0 {
		t.Fatalf("deleting a run left its events: %+v", evs)
	}
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v != len(migrations) {
		t.Fatalf("schema version %d (%v), want %d", v, err, len(migrations))
	}
	s.Close()

	// Reopening migrates nothing more; a store from a newer ace is refused.
	s = open(t, path)
	if _, err := s.db.ExecContext(ctx, "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, path); err == nil {
		t.Fatal("a store of schema version 99 opened")
	}
}

func TestMigrationOfABadVarsMapFailsWhole(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ace.db")
	writeV1Store(t, path)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE runs SET vars='not json' WHERE id=2`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(context.Background(), path); err == nil {
		t.Fatal("a store with unreadable vars migrated")
	}
	// Nothing was half done: the store is still version 1, every row where it was.
	db, err = sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v, n int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 1 {
		t.Fatalf("version after a failed migration %d (%v)", v, err)
	}
	if err := db.QueryRow("SELECT count(*) FROM events").Scan(&n); err != nil || n != 3 {
		t.Fatalf("events after a failed migration %d (%v)", n, err)
	}
	var vars string
	if err := db.QueryRow("SELECT vars FROM runs WHERE id=1").Scan(&vars); err != nil || vars == "" {
		t.Fatalf("old runs table after a failed migration: %q %v", vars, err)
	}
}
