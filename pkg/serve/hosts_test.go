package serve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestHostsShowTheirSlots: each host's agents working and kept idle against its poll.max_concurrent, the runs
// waiting for a slot and the working copies held (released runs keep theirs) are on the API and the dashboard,
// with the queue's wait; each run says what its agent is to the slots, and /metrics exports the same.
func TestHostsShowTheirSlots(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, "active/monitor", "active/follow_pr/pr", "active/follow_pr/pr", "active/follow_pr/pr", "done/done/pr")
	ctx := context.Background()
	waitingSince := time.Now().Add(-3 * time.Minute)
	put := func(issue int, slot store.Slot) {
		r := f.runs[issue]
		r.Host, r.Workdir = "build-01", "/w/"+itoa(issue) // a new host: the run's slot is written with it
		r.Slot, r.SlotAt = slot, waitingSince
		if slot != store.SlotWork {
			r.State.Follow = &store.FollowState{}
		}
		if err := f.st.UpdateRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	put(100, store.SlotWork) // an agent at work
	put(101, store.SlotNone) // released, no round
	put(102, store.SlotWait) // a round waits for a slot
	put(103, store.SlotIdle) // its agent kept while nobody needs the slot
	if err := f.st.Heartbeat(ctx, store.Host{Name: "build-01", MaxConcurrent: 4, Running: 2}); err != nil {
		t.Fatal(err)
	}
	var got workflow.Fleet
	if err := json.NewDecoder(f.do("GET", "/api/v1/hosts", "", nil).Body).Decode(&got); err != nil || len(got.Hosts) != 1 {
		t.Fatalf("hosts: %+v %v", got, err)
	}
	if h := got.Hosts[0]; !h.Alive || h.Live != 2 || h.Working != 1 || h.Idle != 1 || h.Waiting != 1 || h.Held != 4 || h.MaxConcurrent != 4 {
		t.Errorf("build-01: %+v, want 2/4 live (1 working, 1 idle), 1 waiting, 4 held", h)
	}
	page := body(t, f.do("GET", "/", "", nil))
	for _, want := range []string{"<b>build-01</b> 1 agent working and 1 idle of 4; 1 run waiting for a slot (for 3m); 4 working copies held",
		"queue: 1 issue waiting for a slot (0 labelled and not started, 1 on a host), the oldest for 3m", "follow_pr · idle", "follow_pr · released",
		"follow_pr · waiting for a slot"} {
		if !strings.Contains(page, want) {
			t.Errorf("the dashboard lacks %q", want)
		}
	}
	metrics := body(t, f.do("GET", "/metrics", "", nil))
	for _, want := range []string{`ace_agents{host="build-01",state="idle"} 1`, `ace_agents{host="build-01",state="working"} 1`,
		`ace_slots{host="build-01"} 4`, `ace_runs_waiting_slot{host="build-01"} 1`, "ace_queue_issues 1", "ace_queue_oldest_wait_seconds 18"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
