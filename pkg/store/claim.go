package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Claim makes owner the one process driving the issue, for ttl. It succeeds when the issue is unclaimed, the
// previous claim expired, or owner already holds it.
func (s *Store) Claim(ctx context.Context, repo string, issue int, owner string, ttl time.Duration) (bool, error) {
	now := s.now()
	res, err := s.db.ExecContext(ctx, `INSERT INTO claims (repo, issue, owner, expires_at) VALUES (?,?,?,?)
		ON CONFLICT (repo, issue) DO UPDATE SET owner=excluded.owner, expires_at=excluded.expires_at
		WHERE claims.owner=excluded.owner OR claims.expires_at < ?`,
		repo, issue, owner, nanos(now.Add(ttl)), nanos(now))
	if err != nil {
		return false, fmt.Errorf("claim %s#%d: %w", repo, issue, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RenewClaim extends owner's claim; it fails when owner no longer holds it.
func (s *Store) RenewClaim(ctx context.Context, repo string, issue int, owner string, ttl time.Duration) error {
	res, err := s.db.ExecContext(ctx, "UPDATE claims SET expires_at=? WHERE repo=? AND issue=? AND owner=?",
		nanos(s.now().Add(ttl)), repo, issue, owner)
	if err != nil {
		return fmt.Errorf("renew claim %s#%d: %w", repo, issue, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("claim %s#%d is no longer held by %s: %w", repo, issue, owner, ErrConflict)
	}
	return nil
}

// RenewClaims extends every claim owner holds in one statement and returns how many there were: a monitor that
// holds the claims of many runs renews them all at the cost of one write.
func (s *Store) RenewClaims(ctx context.Context, owner string, ttl time.Duration) (int, error) {
	res, err := s.db.ExecContext(ctx, "UPDATE claims SET expires_at=? WHERE owner=?", nanos(s.now().Add(ttl)), owner)
	if err != nil {
		return 0, fmt.Errorf("renew the claims of %s: %w", owner, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// ClaimKey names an issue's claim.
type ClaimKey struct {
	Repo  string
	Issue int
}

// ClaimsOf lists the unexpired claims owner holds.
func (s *Store) ClaimsOf(ctx context.Context, owner string) (map[ClaimKey]bool, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT repo, issue FROM claims WHERE owner=? AND expires_at >= ?", owner, nanos(s.now()))
	if err != nil {
		return nil, fmt.Errorf("claims of %s: %w", owner, err)
	}
	defer rows.Close()
	out := map[ClaimKey]bool{}
	for rows.Next() {
		var k ClaimKey
		if err := rows.Scan(&k.Repo, &k.Issue); err != nil {
			return nil, fmt.Errorf("claims of %s: %w", owner, err)
		}
		out[k] = true
	}
	return out, rows.Err()
}

// ReleaseClaim drops owner's claim (a claim held by someone else is left alone).
func (s *Store) ReleaseClaim(ctx context.Context, repo string, issue int, owner string) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM claims WHERE repo=? AND issue=? AND owner=?", repo, issue, owner)
	if err != nil {
		return fmt.Errorf("release claim %s#%d: %w", repo, issue, err)
	}
	return nil
}

// ClaimHolder returns who holds the issue's claim and until when ("" when nobody does).
func (s *Store) ClaimHolder(ctx context.Context, repo string, issue int) (string, time.Time, error) {
	var owner string
	var exp int64
	err := s.db.QueryRowContext(ctx, "SELECT owner, expires_at FROM claims WHERE repo=? AND issue=?", repo, issue).Scan(&owner, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("claim holder of %s#%d: %w", repo, issue, err)
	}
	return owner, fromNanos(exp), nil
}
