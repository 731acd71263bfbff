package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schema version 2 keeps every time as INTEGER Unix nanoseconds (the RFC 3339 text of version 1 compared
// wrongly within a second: "…:05Z" sorts after "…:05.5Z") and the engine's bookkeeping as a typed RunState
// (runs.state) instead of a map of strings (runs.vars). SQLite cannot change a column's type, so each table is
// rebuilt: created anew, filled from the old one, converted in Go, and renamed over it.
const schemaV2 = `CREATE TABLE runs_v2 (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		repo TEXT NOT NULL,
		issue INTEGER NOT NULL,
		attempt INTEGER NOT NULL,
		agent TEXT NOT NULL,
		runner TEXT NOT NULL DEFAULT 'tmux',
		step TEXT NOT NULL,
		status TEXT NOT NULL,
		session TEXT NOT NULL DEFAULT '',
		agent_session_id TEXT NOT NULL DEFAULT '',
		workdir TEXT NOT NULL DEFAULT '',
		branch TEXT NOT NULL DEFAULT '',
		base_branch TEXT NOT NULL DEFAULT '',
		pr_number INTEGER NOT NULL DEFAULT 0,
		pr_url TEXT NOT NULL DEFAULT '',
		status_comment_id INTEGER NOT NULL DEFAULT 0,
		nudges INTEGER NOT NULL DEFAULT 0,
		restarts INTEGER NOT NULL DEFAULT 0,
		error TEXT NOT NULL DEFAULT '',
		state TEXT NOT NULL DEFAULT '{}',
		version INTEGER NOT NULL DEFAULT 1,
		triggered_at INTEGER NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		finished_at INTEGER,
		UNIQUE (repo, issue, attempt)
	);
	CREATE TABLE events_v2 (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
		time INTEGER NOT NULL,
		kind TEXT NOT NULL,
		step TEXT NOT NULL DEFAULT '',
		message TEXT NOT NULL DEFAULT '',
		data TEXT NOT NULL DEFAULT ''
	);
	CREATE TABLE claims_v2 (
		repo TEXT NOT NULL,
		issue INTEGER NOT NULL,
		owner TEXT NOT NULL,
		expires_at INTEGER NOT NULL,
		PRIMARY KEY (repo, issue)
	);
	INSERT INTO runs_v2 (id, repo, issue, attempt, agent, runner, step, status, session, agent_session_id, workdir,
		branch, base_branch, pr_number, pr_url, status_comment_id, nudges, restarts, error, version, triggered_at,
		created_at, updated_at)
		SELECT id, repo, issue, attempt, agent, runner, step, status, session, agent_session_id, workdir, branch,
		base_branch, pr_number, pr_url, status_comment_id, nudges, restarts, error, version, 0, 0, 0 FROM runs;
	INSERT INTO events_v2 (id, run_id, time, kind, step, message, data)
		SELECT id, run_id, 0, kind, step, message, data FROM events;
	INSERT INTO claims_v2 (repo, issue, owner, expires_at) SELECT repo, issue, owner, 0 FROM claims;`

const swapV2 = `DROP TABLE events;
	DROP TABLE runs;
	DROP TABLE claims;
	ALTER TABLE runs_v2 RENAME TO runs;
	ALTER TABLE events_v2 RENAME TO events;
	ALTER TABLE claims_v2 RENAME TO claims;
	CREATE INDEX runs_status ON runs (status);
	CREATE INDEX events_run ON events (run_id, id);`

func typedStateAndNanoTimes(ctx context.Context, tx *txn) error {
	// Ids stay as they were; so must the counters behind them, or a deleted run's id could come back.
	seqs, err := sequences(ctx, tx)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, schemaV2); err != nil {
		return fmt.Errorf("copy into the new tables: %w", err)
	}
	if err := convertRuns(ctx, tx); err != nil {
		return err
	}
	if err := convertTimes(ctx, tx, "SELECT id, time FROM events", "UPDATE events_v2 SET time=? WHERE id=?"); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	if err := convertTimes(ctx, tx, "SELECT repo || '#' || issue, expires_at FROM claims",
		"UPDATE claims_v2 SET expires_at=? WHERE repo || '#' || issue = ?"); err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	if _, err := tx.ExecContext(ctx, swapV2); err != nil {
		return fmt.Errorf("replace the old tables: %w", err)
	}
	for name, seq := range seqs {
		if _, err := tx.ExecContext(ctx, "UPDATE sqlite_sequence SET seq=max(seq, ?) WHERE name=?", seq, name); err != nil {
			return fmt.Errorf("keep the id counter of %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO sqlite_sequence (name, seq) SELECT ?, ? WHERE NOT EXISTS "+
			"(SELECT 1 FROM sqlite_sequence WHERE name=?)", name, seq, name); err != nil {
			return fmt.Errorf("keep the id counter of %s: %w", name, err)
		}
	}
	return nil
}

func sequences(ctx context.Context, tx *txn) (map[string]int64, error) {
	rows, err := tx.QueryContext(ctx, "SELECT name, seq FROM sqlite_sequence WHERE name IN ('runs', 'events')")
	if err != nil {
		return nil, fmt.Errorf("read id counters: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var seq int64
		if err := rows.Scan(&name, &seq); err != nil {
			return nil, fmt.Errorf("read id counters: %w", err)
		}
		out[name] = seq
	}
	return out, rows.Err()
}

// convertRuns fills runs_v2's times and state from the text and vars of the old rows.
func convertRuns(ctx context.Context, tx *txn) error {
	type old struct {
		id                                int64
		vars, triggered, created, updated string
		finished                          sql.NullString
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, vars, triggered_at, created_at, updated_at, finished_at FROM runs")
	if err != nil {
		return fmt.Errorf("read runs: %w", err)
	}
	var all []old
	for rows.Next() {
		var o old
		if err := rows.Scan(&o.id, &o.vars, &o.triggered, &o.created, &o.updated, &o.finished); err != nil {
			rows.Close()
			return fmt.Errorf("read runs: %w", err)
		}
		all = append(all, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read runs: %w", err)
	}
	for _, o := range all {
		var vars map[string]string
		if err := json.Unmarshal([]byte(o.vars), &vars); err != nil {
			return fmt.Errorf("run %d: vars: %w", o.id, err)
		}
		state, err := json.Marshal(stateFromVars(vars))
		if err != nil {
			return fmt.Errorf("run %d: %w", o.id, err)
		}
		var finished any
		if o.finished.Valid {
			finished = nanos(parseV1Time(o.finished.String))
		}
		_, err = tx.ExecContext(ctx, "UPDATE runs_v2 SET state=?, triggered_at=?, created_at=?, updated_at=?, finished_at=? WHERE id=?",
			string(state), nanos(parseV1Time(o.triggered)), nanos(parseV1Time(o.created)), nanos(parseV1Time(o.updated)),
			finished, o.id)
		if err != nil {
			return fmt.Errorf("run %d: %w", o.id, err)
		}
	}
	return nil
}

// convertTimes reads (key, RFC 3339 text) pairs with query and writes each as nanoseconds with update (time, key).
func convertTimes(ctx context.Context, tx *txn, query, update string) error {
	type pair struct{ key, t string }
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	var all []pair
	for rows.Next() {
		var p pair
		if err := rows.Scan(&p.key, &p.t); err != nil {
			rows.Close()
			return err
		}
		all = append(all, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	stmt, err := tx.PrepareContext(ctx, update)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, p := range all {
		if _, err := stmt.ExecContext(ctx, nanos(parseV1Time(p.t)), p.key); err != nil {
			return err
		}
	}
	return nil
}

// parseV1Time reads a version 1 time; one that does not parse becomes the zero time, as version 1 read it.
func parseV1Time(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// stateFromVars converts version 1's vars. A key this version does not know is dropped: no code reads it.
func stateFromVars(v map[string]string) RunState {
	num := func(k string) int {
		n, _ := strconv.Atoi(v[k])
		return n
	}
	flag := func(k string) bool { return v[k] == "1" }
	st := RunState{
		Title:         v["title"],
		RemoteURL:     v["remote_url"],
		Model:         v["model"],
		Labeled:       flag("labeled"),
		Retries:       num("retries"),
		MonitorSince:  parseV1Time(v["monitor_since"]),
		IssueChecked:  parseV1Time(v["issue_checked"]),
		Summary:       v["summary"],
		Question:      v["question"],
		QuestionAt:    parseV1Time(v["question_at"]),
		Questions:     strings.Count(v["questions"], ","), // one comma was appended per question asked
		Remembered:    flag("remembered"),
		MemoryPointer: v["memory_pointer"],
		AgentState: AgentState{
			PromptDelivered: flag("prompt_delivered"),
			Resume:          flag("resume"),
			NudgedAt:        parseV1Time(v["nudged_at"]),
			LastScreen:      v["last_screen"],
			Compacting:      flag("compacting"),
		},
		ExecState: ExecState{
			ExecProc:    v["exec_proc"],
			ExecTurn:    num("exec_turn"),
			ExecSeen:    num("exec_seen"),
			ExecPending: v["exec_pending"],
			ExecFormat:  v["exec_format"],
			Transcript:  v["transcript"],
		},
	}
	if off, err := strconv.ParseInt(v["compact_at"], 10, 64); err == nil {
		st.CompactAt, st.HasCompactAt = off, true
	}
	return st
}
