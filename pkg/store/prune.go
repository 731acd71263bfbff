package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// pruneBatch bounds the runs one transaction of Prune deletes: a long delete holds locks other writers wait on.
const pruneBatch = 500

// Prune deletes the runs that finished before cutoff (done, failed, cancelled, closed), with their events, and
// reports how many runs went. It deletes in batches, each its own transaction, so the hosts' own writes go on
// meanwhile.
func (s *Store) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	const pick = `SELECT id FROM runs WHERE finished_at IS NOT NULL AND finished_at < ?
		AND status IN ('done', 'failed', 'cancelled', 'closed') ORDER BY id LIMIT ?`
	total := 0
	for {
		n, err := s.pruneBatch(ctx, pick, nanos(cutoff))
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}

func (s *Store) pruneBatch(ctx context.Context, pick string, cutoff int64) (int, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("prune: begin: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, pick, cutoff, pruneBatch)
	if err != nil {
		return 0, fmt.Errorf("prune: pick runs: %w", err)
	}
	var ids []any
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("prune: pick runs: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("prune: pick runs: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	in := "(?" + strings.Repeat(",?", len(ids)-1) + ")"
	// Events first: a SQLite store opened without foreign keys would not cascade.
	if _, err := tx.ExecContext(ctx, "DELETE FROM events WHERE run_id IN "+in, ids...); err != nil {
		return 0, fmt.Errorf("prune: delete events: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM runs WHERE id IN "+in, ids...); err != nil {
		return 0, fmt.Errorf("prune: delete runs: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("prune: commit: %w", err)
	}
	return len(ids), nil
}
