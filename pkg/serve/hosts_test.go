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

// TestHostsShowTheirSlots: each host's live agents against its poll.max_concurrent, the rounds of released runs
// waiting for a slot and the working copies held (released runs keep theirs) are on the API and the dashboard.
func TestHostsShowTheirSlots(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, "active/monitor", "active/follow_pr/pr", "active/follow_pr/pr", "done/done/pr")
	ctx := context.Background()
	put := func(issue int, change func(r *store.Run)) {
		r := f.runs[issue]
		r.Host, r.Workdir = "build-01", "/w/"+itoa(issue)
		change(r)
		if err := f.st.UpdateRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	put(100, func(*store.Run) {})                                                        // an agent at work
	put(101, func(r *store.Run) { r.State.Follow = &store.FollowState{Released: true} }) // released, no round
	put(102, func(r *store.Run) {
		r.State.Follow = &store.FollowState{Released: true, WaitingSlot: time.Now()} // a round waits for a slot
	})
	if err := f.st.Heartbeat(ctx, store.Host{Name: "build-01", MaxConcurrent: 4, Running: 1}); err != nil {
		t.Fatal(err)
	}
	var got struct{ Hosts []workflow.HostSlots }
	if err := json.NewDecoder(f.do("GET", "/api/v1/hosts", "", nil).Body).Decode(&got); err != nil || len(got.Hosts) != 1 {
		t.Fatalf("hosts: %+v %v", got, err)
	}
	if h := got.Hosts[0]; !h.Alive || h.Live != 1 || h.Waiting != 1 || h.Held != 3 || h.MaxConcurrent != 4 {
		t.Errorf("build-01: %+v, want 1/4 live, 1 waiting, 3 held", h)
	}
	page := body(t, f.do("GET", "/", "", nil))
	if want := "<b>build-01</b> 1/4 agents live, 1 round waiting for a slot, 3 working copies held"; !strings.Contains(page, want) {
		t.Errorf("the dashboard lacks %q", want)
	}
}
