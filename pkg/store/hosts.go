package store

import (
	"context"
	"fmt"
	"time"
)

// Host is one ace process's machine in a fleet sharing this store: it heartbeats while it works runs.
type Host struct {
	Name          string    `json:"name"`
	StartedAt     time.Time `json:"started_at"`
	HeartbeatAt   time.Time `json:"heartbeat_at"`
	MaxConcurrent int       `json:"max_concurrent"`
	// Running is how many live agents the host runs (its load against MaxConcurrent), as of its last heartbeat.
	Running int `json:"running"`
}

// Heartbeat records that host is alive now, with its load.
func (s *Store) Heartbeat(ctx context.Context, h Host) error {
	now := s.now()
	if h.StartedAt.IsZero() {
		h.StartedAt = now
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO hosts (name, started_at, heartbeat_at, max_concurrent, running)
		VALUES (?,?,?,?,?) ON CONFLICT (name) DO UPDATE SET heartbeat_at=excluded.heartbeat_at,
		max_concurrent=excluded.max_concurrent, running=excluded.running, started_at=excluded.started_at`,
		h.Name, nanos(h.StartedAt), nanos(now), h.MaxConcurrent, h.Running)
	if err != nil {
		return fmt.Errorf("heartbeat of host %s: %w", h.Name, err)
	}
	return nil
}

// Hosts lists the hosts that ever heartbeat, by name.
func (s *Store) Hosts(ctx context.Context) ([]Host, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name, started_at, heartbeat_at, max_concurrent, running FROM hosts ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	defer rows.Close()
	var out []Host
	for rows.Next() {
		var h Host
		var started, beat int64
		if err := rows.Scan(&h.Name, &started, &beat, &h.MaxConcurrent, &h.Running); err != nil {
			return nil, fmt.Errorf("list hosts: %w", err)
		}
		h.StartedAt, h.HeartbeatAt = fromNanos(started), fromNanos(beat)
		out = append(out, h)
	}
	return out, rows.Err()
}
