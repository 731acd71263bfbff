package store

import (
	"context"
	"fmt"
	"time"
)

// An eval's items, shared by the hosts of a fleet that run it (ace eval run with the store on PostgreSQL): each
// item (task × agent × run, by its key) is numbered once for all of them, held by one host at a time under a lease
// the host renews while it runs the item, and scored once — its result (pkg/eval's, as JSON) kept here, where
// ace eval report on any host reads it. An eval is named by the caller (its repository and directory's name).

// evalNumberLockKey orders the numbering of new items between hosts (pg_advisory_xact_lock; SQLite's immediate
// transactions are ordered already).
const evalNumberLockKey = 0x616365_0002

// EvalNumber returns the number of each of keys in eval, numbering those it has not seen after the others, in
// the order given.
func (s *Store) EvalNumber(ctx context.Context, eval string, keys []string) (map[string]int, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("number eval items: %w", err)
	}
	defer tx.Rollback()
	if s.kind == PostgreSQL {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", int64(evalNumberLockKey)); err != nil {
			return nil, fmt.Errorf("number eval items: lock: %w", err)
		}
	}
	out := map[string]int{}
	rows, err := tx.QueryContext(ctx, "SELECT item_key, n FROM eval_items WHERE eval_name=?", eval)
	if err != nil {
		return nil, fmt.Errorf("number eval items: %w", err)
	}
	last := 0
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("number eval items: %w", err)
		}
		out[k], last = n, max(last, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("number eval items: %w", err)
	}
	for _, k := range keys {
		if _, ok := out[k]; ok {
			continue
		}
		last++
		if _, err := tx.ExecContext(ctx, "INSERT INTO eval_items (eval_name, n, item_key) VALUES (?,?,?)", eval, last, k); err != nil {
			return nil, fmt.Errorf("number eval item %s: %w", k, err)
		}
		out[k] = last
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("number eval items: %w", err)
	}
	return out, nil
}

// EvalTake makes item n of eval host's until until: true when it has no result and no other host holds it (or
// its lease ran out). The host that holds it takes it again to renew its lease.
func (s *Store) EvalTake(ctx context.Context, eval string, n int, host string, until time.Time) (bool, error) {
	now := s.now()
	res, err := s.db.ExecContext(ctx, `UPDATE eval_items SET host=?, lease_until=? WHERE eval_name=? AND n=? AND result=''
		AND (host='' OR host=? OR lease_until<?)`, host, nanos(until), eval, n, host, nanos(now))
	if err != nil {
		return false, fmt.Errorf("take eval item %d: %w", n, err)
	}
	k, err := res.RowsAffected()
	return k == 1, err
}

// EvalScore keeps item n's result, scored by host: false when it had one already (another host took the item
// over once this one's lease ran out, and scored it first).
func (s *Store) EvalScore(ctx context.Context, eval string, n int, host string, result []byte) (bool, error) {
	if len(result) == 0 {
		return false, fmt.Errorf("score eval item %d: an empty result", n)
	}
	res, err := s.db.ExecContext(ctx, "UPDATE eval_items SET result=?, host=? WHERE eval_name=? AND n=? AND result=''",
		string(result), host, eval, n)
	if err != nil {
		return false, fmt.Errorf("score eval item %d: %w", n, err)
	}
	k, err := res.RowsAffected()
	return k == 1, err
}

// EvalResults are eval's results by item number.
func (s *Store) EvalResults(ctx context.Context, eval string) (map[int][]byte, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT n, result FROM eval_items WHERE eval_name=? AND result<>''", eval)
	if err != nil {
		return nil, fmt.Errorf("read eval results: %w", err)
	}
	defer rows.Close()
	out := map[int][]byte{}
	for rows.Next() {
		var n int
		var r string
		if err := rows.Scan(&n, &r); err != nil {
			return nil, fmt.Errorf("read eval results: %w", err)
		}
		out[n] = []byte(r)
	}
	return out, rows.Err()
}

// EvalNames are the names of the evals that have a result, sorted.
func (s *Store) EvalNames(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT DISTINCT eval_name FROM eval_items WHERE result<>'' ORDER BY eval_name")
	if err != nil {
		return nil, fmt.Errorf("list evals: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("list evals: %w", err)
		}
		out = append(out, name)
	}
	return out, rows.Err()
}
