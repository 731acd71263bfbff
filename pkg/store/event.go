package store

import (
	"context"
	"fmt"
	"time"
)

// AppendEvent adds an event to a run's log.
func (s *Store) AppendEvent(ctx context.Context, runID int64, ev Event) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := insertEvent(ctx, tx, runID, ev, s.now()); err != nil {
		return err
	}
	return tx.Commit()
}

func insertEvent(ctx context.Context, tx *txn, runID int64, ev Event, now time.Time) error {
	if ev.Time.IsZero() {
		ev.Time = now
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO events (run_id, time, kind, step, message, data) VALUES (?,?,?,?,?,?)",
		runID, nanos(ev.Time), ev.Kind, ev.Step, ev.Message, ev.Data)
	if err != nil {
		return fmt.Errorf("record event %s of run %d: %w", ev.Kind, runID, err)
	}
	return nil
}

// Events returns a run's log, oldest first.
func (s *Store) Events(ctx context.Context, runID int64) ([]Event, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, run_id, time, kind, step, message, data FROM events WHERE run_id=? ORDER BY id", runID)
	if err != nil {
		return nil, fmt.Errorf("events of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var ev Event
		var t int64
		if err := rows.Scan(&ev.ID, &ev.RunID, &t, &ev.Kind, &ev.Step, &ev.Message, &ev.Data); err != nil {
			return nil, err
		}
		ev.Time = fromNanos(t)
		out = append(out, ev)
	}
	return out, rows.Err()
}
