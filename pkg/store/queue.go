package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Queued is a labelled issue that dispatch found no slot for: it waits, since Since, for a host to have one.
type Queued struct {
	Repo  string    `json:"repo"`
	Issue int       `json:"issue"`
	Since time.Time `json:"since"`
}

// Queue lists the labelled issues waiting for a slot, longest waiting first.
func (s *Store) Queue(ctx context.Context) ([]Queued, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT repo, issue, since FROM queue ORDER BY since, repo, issue")
	if err != nil {
		return nil, fmt.Errorf("read the queue: %w", err)
	}
	defer rows.Close()
	var out []Queued
	for rows.Next() {
		var q Queued
		var since int64
		if err := rows.Scan(&q.Repo, &q.Issue, &since); err != nil {
			return nil, fmt.Errorf("read the queue: %w", err)
		}
		q.Since = fromNanos(since)
		out = append(out, q)
	}
	return out, rows.Err()
}

// SetQueue records what a dispatch pass found of the labelled issues of repos: waiting are those it had no slot
// for (each keeps the time it first waited, or waits from now), and every other issue of repos leaves the queue
// (started, unlabelled, closed). Issues of repositories the pass did not read stay as they are. It writes only
// what changed.
func (s *Store) SetQueue(ctx context.Context, repos []string, waiting []Queued) error {
	type key struct {
		repo  string
		issue int
	}
	old, err := s.Queue(ctx)
	if err != nil {
		return err
	}
	have := map[key]bool{}
	for _, q := range old {
		have[key{q.Repo, q.Issue}] = true
	}
	want := map[key]bool{}
	now := s.now()
	var add []Queued
	for _, q := range waiting {
		k := key{q.Repo, q.Issue}
		if !have[k] && !want[k] {
			add = append(add, Queued{Repo: q.Repo, Issue: q.Issue, Since: now})
		}
		want[k] = true
	}
	var drop []Queued
	for _, q := range old {
		if slices.Contains(repos, q.Repo) && !want[key{q.Repo, q.Issue}] {
			drop = append(drop, q)
		}
	}
	if len(add) == 0 && len(drop) == 0 {
		return nil
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	for _, q := range drop {
		if _, err := tx.ExecContext(ctx, "DELETE FROM queue WHERE repo=? AND issue=?", q.Repo, q.Issue); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
	}
	for _, q := range add {
		// Another pass may have queued it meanwhile (a pass of a host whose clock is behind): the first time stays.
		if _, err := tx.ExecContext(ctx, "INSERT INTO queue (repo, issue, since) VALUES (?,?,?) ON CONFLICT DO NOTHING",
			q.Repo, q.Issue, nanos(q.Since)); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
	}
	return tx.Commit()
}
