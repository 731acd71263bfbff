package workflow

import (
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// TestWaitingCountsEveryIssueWithoutASlot: the queue's wait is the labelled issues not started, the runs waiting on
// live hosts, and the runs a dead host held working (they wait to move, since its last heartbeat) — not a dead
// host's idle or released ones, which need no slot — and since when the oldest of them waits.
func TestWaitingCountsEveryIssueWithoutASlot(t *testing.T) {
	now := time.Now()
	f := Fleet{
		Queue: []store.Queued{{Repo: "o/r", Issue: 1, Since: now.Add(-time.Minute)}},
		Hosts: []HostSlots{
			{Host: store.Host{Name: "a", HeartbeatAt: now}, Alive: true, Working: 3, Waiting: 2, OldestWait: now.Add(-2 * time.Minute)},
			{Host: store.Host{Name: "b", HeartbeatAt: now.Add(-5 * time.Minute)}, Working: 1, Idle: 2},
			{Host: store.Host{Name: "c", HeartbeatAt: now.Add(-9 * time.Minute)}, Idle: 1},
		},
	}
	w := f.Waiting()
	if w.Queued != 1 || w.OnHosts != 2 || w.Stranded != 1 || !w.Since.Equal(now.Add(-5*time.Minute)) {
		t.Fatalf("waiting %+v", w)
	}
	if got, want := f.DescribeQueue(now), "queue: 4 issues waiting for a slot (1 labelled and not started, 2 on a host, "+
		"1 on a dead host, to be moved), the oldest for 5m"; got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
	if got := (Fleet{}).DescribeQueue(now); got != "queue: empty, every issue has a slot" {
		t.Errorf("an empty queue: %q", got)
	}
}
