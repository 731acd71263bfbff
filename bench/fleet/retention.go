package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aceworks/ace/pkg/store"
)

// retentionPhase is figure 4: the store after -retention runs, kept for ever and with store.keep = 30 days (the
// default). The runs are copies of a run of figure 2 — its row and every one of its events — written one
// transaction a run into two fresh databases, -retention-days of runs at an even rate by a simulated clock; the
// second is pruned as ace's hourly job does (Store.Prune) every simulated hour, and vacuumed every simulated day
// as autovacuum would at least. Figures: database size, ace's tables and the WAL written, per 1,000 runs.
func retentionPhase(ctx context.Context, w *world, o options) error {
	if o.retention == 0 {
		return nil
	}
	template, events, err := templateRun(ctx, w.store())
	if err != nil {
		return err
	}
	fmt.Printf("\n4. Retention: %d runs over %d days (%d a day), each a copy of a figure-2 run with its %d events\n",
		o.retention, o.retentionDays, o.retention/o.retentionDays, events)
	keep := 30 * 24 * time.Hour
	var res [2]retained
	for i, k := range []time.Duration{0, keep} {
		url, err := w.pg.CreateDatabase(ctx)
		if err != nil {
			return err
		}
		st, err := store.OpenPostgres(ctx, url+"&pool_max_conns=2") // ace's schema
		if err != nil {
			return err
		}
		start := time.Now()
		r, err := writeRuns(ctx, w, url, st, template, k, o)
		st.Close()
		if err != nil {
			return err
		}
		r.took = time.Since(start)
		res[i] = r
	}
	per := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)/float64(o.retention)*1000) }
	fmt.Printf("   %-44s %18s %22s\n", "", "kept for ever", "store.keep = 720h")
	fmt.Printf("   %-44s %18d %22d\n", "runs left", res[0].left, res[1].left)
	fmt.Printf("   %-44s %18s %22s\n", "database size, per 1,000 runs written", per(res[0].size), per(res[1].size))
	fmt.Printf("   %-44s %18s %22s\n", "runs + events with indexes, per 1,000 runs", per(res[0].tables), per(res[1].tables))
	fmt.Printf("   %-44s %18s %22s\n", "WAL written, per 1,000 runs", per(res[0].wal), per(res[1].wal))
	fmt.Printf("   %-44s %18.1f %22.1f\n", "database size in all, MiB", float64(res[0].size)/(1<<20), float64(res[1].size)/(1<<20))
	fmt.Printf("   (written in %s and %s; River deletes its own completed jobs after 1 h, cancelled and discarded after 7 days)\n",
		res[0].took.Round(time.Second), res[1].took.Round(time.Second))
	return nil
}

type retained struct {
	size, tables, wal int64
	left              int
	took              time.Duration
}

// templateRun picks the figure-2 run with the median number of events.
func templateRun(ctx context.Context, st *store.Store) (int64, int, error) {
	runs, err := st.ListRuns(ctx, store.Filter{})
	if err != nil || len(runs) == 0 {
		return 0, 0, fmt.Errorf("no run to copy (%v)", err)
	}
	type counted struct {
		id int64
		n  int
	}
	var cs []counted
	for _, r := range runs {
		evs, err := st.Events(ctx, r.ID)
		if err != nil {
			return 0, 0, err
		}
		cs = append(cs, counted{r.ID, len(evs)})
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].n < cs[j].n })
	return cs[len(cs)/2].id, cs[len(cs)/2].n, nil
}

// writeRuns copies the template run o.retention times into the database at url, pruning with keep (0: never).
func writeRuns(ctx context.Context, w *world, url string, st *store.Store, template int64, keep time.Duration, o options) (retained, error) {
	src, err := pgx.Connect(ctx, w.url)
	if err != nil {
		return retained{}, err
	}
	defer src.Close(ctx)
	var run []any
	rows, err := src.Query(ctx, `SELECT repo, agent, runner, branch, base_branch, pr_number, pr_url, status_comment_id,
		state, host FROM runs WHERE id=$1`, template)
	if err != nil {
		return retained{}, err
	}
	if rows.Next() {
		run, err = rows.Values()
	}
	rows.Close()
	if err != nil || run == nil {
		return retained{}, fmt.Errorf("read run %d: %v", template, err)
	}
	var events [][]any
	rows, err = src.Query(ctx, "SELECT time, kind, step, message, data FROM events WHERE run_id=$1 ORDER BY id", template)
	if err != nil {
		return retained{}, err
	}
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			rows.Close()
			return retained{}, err
		}
		events = append(events, v)
	}
	rows.Close()

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return retained{}, err
	}
	defer conn.Close(ctx)
	// The WAL is the same with or without waiting for each flush; not waiting makes 10,000 runs take seconds.
	if _, err := conn.Exec(ctx, "SET synchronous_commit = off"); err != nil {
		return retained{}, err
	}
	var wal0 int64
	if err := w.stats.conn.QueryRow(ctx, "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").Scan(&wal0); err != nil {
		return retained{}, err
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	every := time.Duration(o.retentionDays) * 24 * time.Hour / time.Duration(o.retention)
	lastPrune, lastVacuum := start, start
	for i := range o.retention {
		now := start.Add(time.Duration(i) * every)
		t := now.UnixNano()
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(`INSERT INTO runs (repo, issue, attempt, agent, runner, step, status, branch, base_branch, pr_number, pr_url,
			status_comment_id, state, triggered_at, created_at, updated_at, finished_at, host)
			VALUES ($1, $2, 1, $3, $4, 'done', 'done', $5, $6, $7, $8, $9, $10, $11, $11, $11, $11, $12)`,
			run[0], i+1, run[1], run[2], run[3], run[4], run[5], run[6], run[7], run[8], t, run[9])
		for _, e := range events {
			b.Queue(`INSERT INTO events (run_id, time, kind, step, message, data)
				VALUES (currval(pg_get_serial_sequence('runs', 'id')), $1, $2, $3, $4, $5)`, t, e[1], e[2], e[3], e[4])
		}
		b.Queue("COMMIT")
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return retained{}, fmt.Errorf("write run %d: %w", i+1, err)
		}
		if keep > 0 && now.Sub(lastPrune) >= time.Hour {
			lastPrune = now
			if _, err := st.Prune(ctx, now.Add(-keep)); err != nil {
				return retained{}, err
			}
		}
		if now.Sub(lastVacuum) >= 24*time.Hour {
			lastVacuum = now
			if _, err := conn.Exec(ctx, "VACUUM runs, events"); err != nil {
				return retained{}, err
			}
		}
	}
	if _, err := conn.Exec(ctx, "VACUUM runs, events"); err != nil {
		return retained{}, err
	}
	var r retained
	if err := w.stats.conn.QueryRow(ctx, "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").Scan(&r.wal); err != nil {
		return retained{}, err
	}
	r.wal -= wal0
	err = conn.QueryRow(ctx, `SELECT pg_database_size(current_database()),
		pg_total_relation_size('runs') + pg_total_relation_size('events'), (SELECT count(*) FROM runs)`).Scan(&r.size, &r.tables, &r.left)
	return r, err
}
