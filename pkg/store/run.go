package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Status is where a run stands as a whole. Stored as text so that stores stay readable across versions.
type Status string

// Run statuses.
const (
	StatusActive       Status = "active"
	StatusWaitingInput Status = "waiting_input"
	StatusDone         Status = "done"
	StatusFailed       Status = "failed"
	StatusCancelled    Status = "cancelled"
	// StatusClosed ends a run whose pull request was closed without being merged.
	StatusClosed Status = "closed"
	// StatusPausedLimit is a run whose agent's account hit a usage or rate limit: it waits, at its step, for
	// State.ResumeAt. Not terminal.
	StatusPausedLimit Status = "paused_limit"
)

// Terminal reports whether a run with this status has ended.
func (s Status) Terminal() bool {
	return s == StatusDone || s == StatusFailed || s == StatusCancelled || s == StatusClosed
}

// Run is one attempt at one issue.
type Run struct {
	ID              int64      `json:"id"`
	Repo            string     `json:"repo"`
	Issue           int        `json:"issue"`
	Attempt         int        `json:"attempt"`
	Agent           string     `json:"agent"`
	Runner          string     `json:"runner"`
	Step            string     `json:"step"`
	Status          Status     `json:"status"`
	Session         string     `json:"session,omitempty"`
	AgentSessionID  string     `json:"agent_session_id,omitempty"`
	Workdir         string     `json:"workdir,omitempty"`
	Branch          string     `json:"branch,omitempty"`
	BaseBranch      string     `json:"base_branch,omitempty"`
	PRNumber        int        `json:"pr_number,omitempty"`
	PRURL           string     `json:"pr_url,omitempty"`
	StatusCommentID int64      `json:"status_comment_id,omitempty"`
	Nudges          int        `json:"nudges"`
	Restarts        int        `json:"restarts"`
	Error           string     `json:"error,omitempty"`
	State           RunState   `json:"state"`
	Version         int64      `json:"version"`
	TriggeredAt     time.Time  `json:"triggered_at"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
	// Host is the ace host that holds the run's agent session and working copy (its jobs go to that host's queue).
	Host string `json:"host"`
	// Slot is what the run holds of its host's slots (poll.max_concurrent), since SlotAt (slots.go). It is not part
	// of the run's versioned update: TakeSlot and SetSlot write it, and UpdateRun only when the run changes host.
	Slot   Slot      `json:"slot,omitempty"`
	SlotAt time.Time `json:"slot_at,omitzero"`
}

// Event is one entry of a run's append-only log: a transition or a side effect.
type Event struct {
	ID      int64     `json:"id"`
	RunID   int64     `json:"run_id"`
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Step    string    `json:"step,omitempty"`
	Message string    `json:"message,omitempty"`
	Data    string    `json:"data,omitempty"`
}

// Filter selects runs; zero fields match everything.
type Filter struct {
	Repo     string
	Issue    int
	Host     string
	Statuses []Status
	// CreatedSince keeps the runs created at or after it (zero: all).
	CreatedSince time.Time
	Limit        int
}

const runColumns = `id, repo, issue, attempt, agent, runner, step, status, session, agent_session_id, workdir, branch,
	base_branch, pr_number, pr_url, status_comment_id, nudges, restarts, error, state, version, triggered_at,
	created_at, updated_at, finished_at, host, slot, slot_at`

// CreateRun inserts r (ID, Version and timestamps are set) with a "created" event.
func (s *Store) CreateRun(ctx context.Context, r *Run) error {
	now := s.now()
	if r.TriggeredAt.IsZero() {
		r.TriggeredAt = now
	}
	if r.Runner == "" {
		r.Runner = RunnerTmux
	}
	state, err := json.Marshal(r.State)
	if err != nil {
		return fmt.Errorf("run state: %w", err)
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `INSERT INTO runs (repo, issue, attempt, agent, runner, step, status, session,
		agent_session_id, workdir, branch, base_branch, pr_number, pr_url, status_comment_id, nudges, restarts, error,
		state, version, triggered_at, created_at, updated_at, host, slot, slot_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1,?,?,?,?,?,?) RETURNING id`,
		r.Repo, r.Issue, r.Attempt, r.Agent, r.Runner, r.Step, r.Status, r.Session, r.AgentSessionID, r.Workdir,
		r.Branch, r.BaseBranch, r.PRNumber, r.PRURL, r.StatusCommentID, r.Nudges, r.Restarts, r.Error, string(state),
		nanos(r.TriggeredAt), nanos(now), nanos(now), r.Host, r.Slot, nanos(r.SlotAt)).Scan(&id)
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("attempt %d of %s#%d exists already: %w", r.Attempt, r.Repo, r.Issue, ErrConflict)
		}
		return fmt.Errorf("insert run: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	r.ID, r.Version, r.CreatedAt, r.UpdatedAt = id, 1, now, now
	return nil
}

// UpdateRun saves r if nobody changed it since it was read (else ErrConflict), together with ev when given, in
// one transaction. The run's slot is written only when its host changes (a move): r.Slot is then the slot it
// holds on its new host, and the old host's goes with the same write.
func (s *Store) UpdateRun(ctx context.Context, r *Run, ev *Event) error {
	state, err := json.Marshal(r.State)
	if err != nil {
		return fmt.Errorf("run state: %w", err)
	}
	now := s.now()
	var finished any
	if r.FinishedAt != nil {
		finished = nanos(*r.FinishedAt)
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE runs SET agent=?, runner=?, step=?, status=?, session=?, agent_session_id=?,
		workdir=?, branch=?, base_branch=?, pr_number=?, pr_url=?, status_comment_id=?, nudges=?, restarts=?, error=?,
		state=?, version=version+1, updated_at=?, finished_at=?, host=?,
		slot=CASE WHEN host=? THEN slot ELSE ? END, slot_at=CASE WHEN host=? THEN slot_at ELSE ? END
		WHERE id=? AND version=?`,
		r.Agent, r.Runner, r.Step, r.Status, r.Session, r.AgentSessionID, r.Workdir, r.Branch, r.BaseBranch,
		r.PRNumber, r.PRURL, r.StatusCommentID, r.Nudges, r.Restarts, r.Error, string(state), nanos(now), finished,
		r.Host, r.Host, r.Slot, r.Host, nanos(r.SlotAt), r.ID, r.Version)
	if err != nil {
		return fmt.Errorf("update run %d: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("run %d (version %d): %w", r.ID, r.Version, ErrConflict)
	}
	if ev != nil {
		if err := insertEvent(ctx, tx, r.ID, *ev, now); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	r.Version++
	r.UpdatedAt = now
	return nil
}

// GetRun reads one run.
func (s *Store) GetRun(ctx context.Context, id int64) (*Run, error) {
	row := s.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE id=?", id)
	r, err := scanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	return r, err
}

// LatestRun returns the run with the highest attempt for the issue.
func (s *Store) LatestRun(ctx context.Context, repo string, issue int) (*Run, error) {
	row := s.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE repo=? AND issue=? ORDER BY attempt DESC LIMIT 1", repo, issue)
	r, err := scanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("no run for %s#%d: %w", repo, issue, ErrNotFound)
	}
	return r, err
}

// ListRuns returns the runs matching f, oldest first.
func (s *Store) ListRuns(ctx context.Context, f Filter) ([]*Run, error) {
	var where []string
	var args []any
	if f.Repo != "" {
		where, args = append(where, "repo=?"), append(args, f.Repo)
	}
	if f.Issue != 0 {
		where, args = append(where, "issue=?"), append(args, f.Issue)
	}
	if f.Host != "" {
		where, args = append(where, "host=?"), append(args, f.Host)
	}
	if !f.CreatedSince.IsZero() {
		where, args = append(where, "created_at>=?"), append(args, nanos(f.CreatedSince))
	}
	if len(f.Statuses) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?,", len(f.Statuses)), ",")
		where = append(where, "status IN ("+ph+")")
		for _, st := range f.Statuses {
			args = append(args, string(st))
		}
	}
	q := "SELECT " + runColumns + " FROM runs"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	out, err := listRuns(ctx, s.db, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// listRuns reads the runs query q selects (runColumns), through h: the store's handle or a transaction's.
func listRuns(ctx context.Context, h interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, q string, args ...any) ([]*Run, error) {
	rows, err := h.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// CountActive counts unfinished runs (active, waiting for input or paused at a usage limit) other than those at
// one of the given steps.
func (s *Store) CountActive(ctx context.Context, exceptSteps ...string) (int, error) {
	q := "SELECT count(*) FROM runs WHERE status IN (?, ?, ?)"
	args := []any{StatusActive, StatusWaitingInput, StatusPausedLimit}
	if len(exceptSteps) > 0 {
		q += " AND step NOT IN (" + strings.TrimSuffix(strings.Repeat("?,", len(exceptSteps)), ",") + ")"
		for _, st := range exceptSteps {
			args = append(args, st)
		}
	}
	var n int
	err := s.db.QueryRowContext(ctx, q, args...).Scan(&n)
	return n, err
}

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (*Run, error) {
	var r Run
	var state string
	var triggered, created, updated, slotAt int64
	var finished sql.NullInt64
	err := sc.Scan(&r.ID, &r.Repo, &r.Issue, &r.Attempt, &r.Agent, &r.Runner, &r.Step, &r.Status, &r.Session,
		&r.AgentSessionID, &r.Workdir, &r.Branch, &r.BaseBranch, &r.PRNumber, &r.PRURL, &r.StatusCommentID, &r.Nudges,
		&r.Restarts, &r.Error, &state, &r.Version, &triggered, &created, &updated, &finished, &r.Host, &r.Slot, &slotAt)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(state), &r.State); err != nil {
		return nil, fmt.Errorf("run %d: state: %w", r.ID, err)
	}
	r.TriggeredAt, r.CreatedAt, r.UpdatedAt, r.SlotAt = fromNanos(triggered), fromNanos(created), fromNanos(updated), fromNanos(slotAt)
	if finished.Valid {
		t := fromNanos(finished.Int64)
		r.FinishedAt = &t
	}
	return &r, nil
}

// LatestPerIssue keeps the newest attempt of each issue among runs, in the order the issues first appear.
func LatestPerIssue(runs []*Run) []*Run {
	type key struct {
		repo  string
		issue int
	}
	best := map[key]*Run{}
	var order []key
	for _, r := range runs {
		k := key{r.Repo, r.Issue}
		b, ok := best[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || r.Attempt > b.Attempt {
			best[k] = r
		}
	}
	out := make([]*Run, 0, len(order))
	for _, k := range order {
		out = append(out, best[k])
	}
	return out
}
