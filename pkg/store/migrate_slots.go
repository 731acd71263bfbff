package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// slotColumns is schema version 5: runs.slot and runs.slot_at (slots.go), and the queue of labelled issues no
// host had a slot for (queue.go). A run unfinished then held a slot for its live agent — unless it followed its
// pull request with its agent released (follow.released, as ace kept it before): that one holds none, and its
// next round continues its conversation (AgentState.Released, which took the place of follow.conversation_on).
func slotColumns(ctx context.Context, tx *txn) error {
	for _, q := range []string{
		`ALTER TABLE runs ADD COLUMN slot TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE runs ADD COLUMN slot_at BIGINT NOT NULL DEFAULT 0`,
		`CREATE TABLE queue (
			repo TEXT NOT NULL,
			issue BIGINT NOT NULL,
			since BIGINT NOT NULL,
			PRIMARY KEY (repo, issue)
		)`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE runs SET slot='work', slot_at=updated_at WHERE "+unfinishedIn, unfinished...); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, state FROM runs WHERE step='follow_pr' AND "+unfinishedIn, unfinished...)
	if err != nil {
		return err
	}
	type released struct {
		id    int64
		state map[string]any
	}
	var rel []released
	for rows.Next() {
		var id int64
		var raw string
		if err := rows.Scan(&id, &raw); err != nil {
			rows.Close()
			return err
		}
		var st map[string]any
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			rows.Close()
			return fmt.Errorf("run %d: state: %w", id, err)
		}
		f, _ := st["follow"].(map[string]any)
		if f == nil || f["released"] != true || f["in_round"] == true {
			continue
		}
		if f["conversation_on"] != nil && f["conversation_on"] != "" {
			st["released"] = true
		}
		delete(f, "released")
		delete(f, "conversation_on")
		delete(f, "waiting_slot")
		rel = append(rel, released{id, st})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range rel {
		b, err := json.Marshal(r.state)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE runs SET slot='', slot_at=0, state=? WHERE id=?", string(b), r.id); err != nil {
			return err
		}
	}
	return nil
}
