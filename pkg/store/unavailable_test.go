package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/pgtest"
)

// TestStoreOutlivesAPostgresRestart: a PostgreSQL store whose server restarts under it (a fast shutdown, then an
// immediate one, as a crash) reports its calls meanwhile as Unavailable, and works again once the server is back,
// through the same pool and without reopening, with what was written before.
func TestStoreOutlivesAPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := pgtest.Own(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, err := pg.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := openAt(t, target{url: url})
	r := &Run{Repo: "acme/widgets", Issue: 1, Attempt: 1, Agent: "fake", Step: "claim", Status: StatusActive}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	for i, mode := range []pgtest.ShutdownMode{pgtest.Fast, pgtest.Immediate} {
		if err := pg.Shutdown(mode); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetRun(ctx, r.ID); !Unavailable(err) {
			t.Fatalf("shutdown %d: GetRun while PostgreSQL is down: %v, want an Unavailable error", i+1, err)
		}
		if err := s.Heartbeat(ctx, Host{Name: "alpha"}); !Unavailable(err) {
			t.Fatalf("shutdown %d: Heartbeat while PostgreSQL is down: %v, want an Unavailable error", i+1, err)
		}
		if err := pg.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		// A connection the pool holds from before may fail once more (Unavailable too); a new one follows.
		var got *Run
		for try := 0; ; try++ {
			got, err = s.GetRun(ctx, r.ID)
			if err == nil || !Unavailable(err) || try == 3 {
				break
			}
		}
		if err != nil {
			t.Fatalf("restart %d: GetRun: %v", i+1, err)
		}
		got.Step = "prepare_workspace"
		if err := s.UpdateRun(ctx, got, &Event{Kind: "transition", Step: got.Step}); err != nil {
			t.Fatalf("restart %d: UpdateRun: %v", i+1, err)
		}
		r = got
	}
	if r.Version != 3 {
		t.Errorf("run version %d after two updates, want 3", r.Version)
	}
}

// TestUnavailableOnlyForAnAbsentDatabase: what the store says of a database that answers — a run not found, a
// conflicting write, a cancelled call, a SQLite store — is not taken for the database being away.
func TestUnavailableOnlyForAnAbsentDatabase(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, fresh func(t *testing.T) target) {
		ctx := context.Background()
		s := openAt(t, fresh(t))
		r := &Run{Repo: "acme/widgets", Issue: 1, Attempt: 1, Agent: "fake", Step: "claim", Status: StatusActive}
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		stale := *r
		if err := s.UpdateRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		_, errCancelled := s.GetRun(cancelled, r.ID)
		_, errMissing := s.GetRun(ctx, r.ID+100)
		errDuplicate := s.CreateRun(ctx, &Run{Repo: r.Repo, Issue: r.Issue, Attempt: 1, Agent: "fake", Step: "claim", Status: StatusActive})
		for name, err := range map[string]error{
			"not found": errMissing,
			"conflict":  s.UpdateRun(ctx, &stale, nil),
			"duplicate": errDuplicate,
			"cancelled": errCancelled,
		} {
			if err == nil {
				t.Errorf("%s: no error", name)
			} else if Unavailable(err) {
				t.Errorf("%s: %v taken for an unavailable database", name, err)
			}
		}
		if !errors.Is(errMissing, ErrNotFound) {
			t.Errorf("not found: %v", errMissing)
		}
	})
	if Unavailable(nil) {
		t.Error("no error taken for an unavailable database")
	}
}
