package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A host's slots (poll.max_concurrent) bound its live agents. What each run holds of them is kept in two columns
// of its row that only the functions here write, apart from the run's versioned update: slot, what it holds, and
// slot_at, since when. A slot is held on the run's host only: a run that moves to another host (UpdateRun with
// a new host) takes the slot it was given for the move and drops the old one in the same write.
//
// A run is given a working slot only by TakeSlot, which decides under a lock of its host (PostgreSQL: an
// advisory lock; SQLite: a write transaction, which is the database's), from the slots the host's runs hold
// right then. So however many ace processes of however many hosts dispatch, move runs and start rounds at once,
// a host never holds more live slots than its capacity — and an agent starts only in a slot given that way.

// Slot is what a run holds of its host's slots.
type Slot string

// The slots a run can hold.
const (
	// SlotNone: no agent, and none needed now (an agent stopped to free its slot: released).
	SlotNone Slot = ""
	// SlotWork: the run works — its agent runs, or is about to start.
	SlotWork Slot = "work"
	// SlotIdle: its agent lives but waits (a pull request, a human, a usage limit); kept until its slot is needed.
	SlotIdle Slot = "idle"
	// SlotEvict: its idle agent is being stopped for a run that needs the slot.
	SlotEvict Slot = "evict"
	// SlotWait: it needs a slot and has no agent: it waits, in order of slot_at.
	SlotWait Slot = "wait"
)

// Live reports whether a run holding s may have an agent process: what counts against poll.max_concurrent.
func (s Slot) Live() bool { return s == SlotWork || s == SlotIdle || s == SlotEvict }

// EvictGrace is how long the one who marked an idle agent to give way has to stop it before anyone else does: two
// stopping it at once is harmless, but says so twice.
const EvictGrace = 10 * time.Second

// unfinished are the statuses of runs that hold slots.
var unfinished = []any{StatusActive, StatusWaitingInput, StatusPausedLimit}

const unfinishedIn = "status IN (?, ?, ?)"

// SlotTake is what TakeSlot decided for a run.
type SlotTake struct {
	// Granted is set when the run holds a working slot now. Was is what it held before: an idle agent, or none
	// (SlotNone, SlotWait: its agent was stopped, or never started).
	Granted bool
	Was     Slot
	// Evicted is set when the run's own idle agent is being stopped for another run: its caller stops it
	// (FreeSlot) and asks again.
	Evicted bool
	// Evict are the runs whose idle agents give way to the runs waiting (this one among them), longest idle
	// first, and those marked more than EvictGrace ago whose stop is not recorded yet (whoever marked them did not
	// get to it: a crash): the caller stops each and frees its slot.
	Evict []*Run
	// Live are the host's live agents, Ahead the runs waiting for a slot before this one.
	Live, Ahead int
}

// TakeSlot gives run r a working slot on its host when one is free — its own idle agent's, or one no run ahead of
// it waits for — under the host's capacity (0: unbounded); otherwise r waits for one (SlotWait, in order of the
// time it began to wait), and as many idle agents as the waiting runs up to r need, and the working ones leave
// room for, are marked to give way (Evict). A run that moved off the host, or ended, gets ErrConflict.
func (s *Store) TakeSlot(ctx context.Context, r *Run, capacity int) (SlotTake, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return SlotTake{}, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := s.lockHost(ctx, tx, r.Host); err != nil {
		return SlotTake{}, err
	}
	// The run itself is read whatever its host says: one from before hosts were recorded has none (it is this one's).
	runs, err := listRuns(ctx, tx, "SELECT "+runColumns+" FROM runs WHERE (host=? OR id=?) AND "+unfinishedIn+" ORDER BY id",
		append([]any{r.Host, r.ID}, unfinished...)...)
	if err != nil {
		return SlotTake{}, fmt.Errorf("slots of host %s: %w", r.Host, err)
	}
	var me *Run
	var work int
	var idle, evict, wait, stale []*Run
	for _, x := range runs {
		switch {
		case x.ID == r.ID:
			me = x
		case x.Slot == SlotWork:
			work++
		case x.Slot == SlotIdle:
			idle = append(idle, x)
		case x.Slot == SlotEvict:
			evict = append(evict, x)
			if s.now().Sub(x.SlotAt) > EvictGrace {
				stale = append(stale, x)
			}
		case x.Slot == SlotWait:
			wait = append(wait, x)
		}
	}
	if me == nil || me.Host != r.Host && me.Host != "" {
		return SlotTake{}, fmt.Errorf("run %d is no unfinished run of host %s: %w", r.ID, r.Host, ErrConflict)
	}
	now := s.now()
	t := SlotTake{Was: me.Slot, Live: work + len(idle) + len(evict)}
	switch me.Slot {
	case SlotWork:
		t.Granted = true
	case SlotIdle: // its own agent goes back to work: no process more
		t.Granted = true
		err = setSlot(ctx, tx, me.ID, SlotWork, now)
	case SlotEvict:
		t.Evicted = true
	default:
		since := me.SlotAt
		if me.Slot != SlotWait || since.IsZero() {
			since = now
		}
		for _, w := range wait {
			if w.SlotAt.Before(since) || w.SlotAt.Equal(since) && w.ID < me.ID {
				t.Ahead++
			}
		}
		if capacity <= 0 || t.Live+t.Ahead < capacity {
			t.Granted = true
			err = setSlot(ctx, tx, me.ID, SlotWork, now)
			break
		}
		// The waiting runs up to this one that the working runs leave room for get slots as idle agents give way:
		// as many are marked as those runs need beyond the slots free and those already being freed.
		want := min(t.Ahead+1, capacity-work) - (capacity - t.Live) - len(evict)
		slices.SortStableFunc(idle, func(a, b *Run) int { return a.SlotAt.Compare(b.SlotAt) })
		for _, x := range idle[:max(0, min(want, len(idle)))] {
			if err = setSlot(ctx, tx, x.ID, SlotEvict, now); err != nil {
				break
			}
			x.Slot, x.SlotAt = SlotEvict, now
			evict = append(evict, x)
			stale = append(stale, x) // this caller's to stop
		}
		if err == nil && (me.Slot != SlotWait || !since.Equal(me.SlotAt)) {
			err = setSlot(ctx, tx, me.ID, SlotWait, since)
		}
		me.Slot, me.SlotAt = SlotWait, since
	}
	if err != nil {
		return SlotTake{}, fmt.Errorf("slot of run %d: %w", r.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return SlotTake{}, fmt.Errorf("commit: %w", err)
	}
	t.Evict = stale
	r.Slot, r.SlotAt = me.Slot, me.SlotAt
	if t.Granted {
		r.Slot, r.SlotAt = SlotWork, now
	}
	return t, nil
}

// SetSlot moves run r's slot to to when it holds one of from, and reports whether it did (false: another process
// moved it first, or the run left its host). It never gives a working slot: only TakeSlot does.
func (s *Store) SetSlot(ctx context.Context, r *Run, to Slot, from ...Slot) (bool, error) {
	if to == SlotWork || to == SlotWait || len(from) == 0 {
		return false, fmt.Errorf("slot of run %d: %q from %v is TakeSlot's to give", r.ID, to, from)
	}
	now := s.now()
	args := []any{to, nanos(now), r.ID, r.Host}
	for _, f := range from {
		args = append(args, f)
	}
	res, err := s.db.ExecContext(ctx, "UPDATE runs SET slot=?, slot_at=? WHERE id=? AND host=? AND slot IN ("+
		strings.TrimSuffix(strings.Repeat("?,", len(from)), ",")+")", args...)
	if err != nil {
		return false, fmt.Errorf("slot of run %d: %w", r.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return false, err
	}
	r.Slot, r.SlotAt = to, now
	return true, nil
}

func setSlot(ctx context.Context, tx *txn, id int64, to Slot, at time.Time) error {
	_, err := tx.ExecContext(ctx, "UPDATE runs SET slot=?, slot_at=? WHERE id=?", to, nanos(at), id)
	return err
}

// slotsLockKey is the first half of the advisory lock that orders the slot decisions of one host on PostgreSQL
// ("ace" in ASCII); the second is a hash of the host's name.
const slotsLockKey = 0x616365

// lockHost orders the slot decisions of one host, until the transaction ends. SQLite's write transactions are
// one at a time already (the store begins them IMMEDIATE).
func (s *Store) lockHost(ctx context.Context, tx *txn, host string) error {
	if s.kind != PostgreSQL {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?::int, hashtext(?))", slotsLockKey, host); err != nil {
		return fmt.Errorf("lock the slots of host %s: %w", host, err)
	}
	return nil
}

// SlotCounts is what one host's runs hold of its slots now.
type SlotCounts struct {
	Work, Idle, Evict, Wait int
	// Held counts the working copies its unfinished runs hold (released ones too: they keep theirs).
	Held int
	// OldestWait is since when the run waiting longest for a slot waits (zero: none waits).
	OldestWait time.Time
}

// Live is the host's live agents.
func (h SlotCounts) Live() int { return h.Work + h.Idle + h.Evict }

// Free is the slots left to new work: those neither working nor promised to a waiting run (an idle agent gives
// way to new work).
func (h SlotCounts) Free(capacity int) int { return capacity - h.Work - h.Wait }

// Slots reads what every host's unfinished runs hold of its slots, in one query.
func (s *Store) Slots(ctx context.Context) (map[string]SlotCounts, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT host, slot, count(*), min(slot_at),
		sum(CASE WHEN workdir <> '' THEN 1 ELSE 0 END) FROM runs WHERE `+unfinishedIn+` GROUP BY host, slot`, unfinished...)
	if err != nil {
		return nil, fmt.Errorf("read slots: %w", err)
	}
	defer rows.Close()
	out := map[string]SlotCounts{}
	for rows.Next() {
		var host string
		var slot Slot
		var n, held int
		var oldest int64
		if err := rows.Scan(&host, &slot, &n, &oldest, &held); err != nil {
			return nil, fmt.Errorf("read slots: %w", err)
		}
		h := out[host]
		h.Held += held
		switch slot {
		case SlotWork:
			h.Work += n
		case SlotIdle:
			h.Idle += n
		case SlotEvict:
			h.Evict += n
		case SlotWait:
			h.Wait += n
			h.OldestWait = fromNanos(oldest)
		}
		out[host] = h
	}
	return out, rows.Err()
}
