package workflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// HostSlots is a host's slots as people are shown them (ace hosts, ace ls, the dashboard, /metrics): its agents
// working and kept idle against its poll.max_concurrent, the runs waiting for a slot and since when, and the
// working copies it holds — every unfinished run's, released ones included, which keep theirs.
type HostSlots struct {
	store.Host
	Alive bool `json:"alive"`
	// Live are its agents alive: Working, and Idle — kept while nobody needs their slot (those giving way
	// included).
	Live    int `json:"live_agents"`
	Working int `json:"working_agents"`
	Idle    int `json:"idle_agents"`
	// Waiting are its runs waiting for a slot (new, moved, a round, an answer, a resume), the longest since
	// OldestWait.
	Waiting    int       `json:"waiting_runs"`
	OldestWait time.Time `json:"oldest_wait,omitzero"`
	Held       int       `json:"held_working_copies"`
}

// Fleet is every host's slots and the queue: the labelled issues no host had a slot for yet.
type Fleet struct {
	Hosts []HostSlots    `json:"hosts"`
	Queue []store.Queued `json:"queue"`
}

// FleetReader is the part of the store the fleet's slots are read from.
type FleetReader interface {
	Hosts(ctx context.Context) ([]store.Host, error)
	Slots(ctx context.Context) (map[string]store.SlotCounts, error)
	Queue(ctx context.Context) ([]store.Queued, error)
}

// ReadFleet reads every host's slots and the queue now, in three queries; a host silent for deadAfter is not
// alive.
func ReadFleet(ctx context.Context, st FleetReader, deadAfter time.Duration, now time.Time) (Fleet, error) {
	hosts, err := st.Hosts(ctx)
	if err != nil {
		return Fleet{}, err
	}
	counts, err := st.Slots(ctx)
	if err != nil {
		return Fleet{}, err
	}
	queue, err := st.Queue(ctx)
	if err != nil {
		return Fleet{}, err
	}
	f := Fleet{Hosts: make([]HostSlots, 0, len(hosts)), Queue: queue}
	if f.Queue == nil {
		f.Queue = []store.Queued{}
	}
	for _, h := range hosts {
		c := counts[h.Name]
		f.Hosts = append(f.Hosts, HostSlots{Host: h, Alive: now.Sub(h.HeartbeatAt) < deadAfter, Live: c.Live(),
			Working: c.Work, Idle: c.Idle + c.Evict, Waiting: c.Wait, OldestWait: c.OldestWait, Held: c.Held})
	}
	return f, nil
}

// Waiting is what waits for a slot over the fleet: labelled issues not started yet (Queued), runs waiting on a
// live host (OnHosts), and the runs a dead host held working, which wait to be moved (Stranded, since its last
// heartbeat); Since is when the one waiting longest began (zero: none waits).
type Waiting struct {
	Queued, OnHosts, Stranded int
	Since                     time.Time
}

// Issues is how many issues wait for a slot.
func (w Waiting) Issues() int { return w.Queued + w.OnHosts + w.Stranded }

// Waiting says what waits for a slot over the fleet now.
func (f Fleet) Waiting() Waiting {
	var w Waiting
	oldest := func(t time.Time) {
		if w.Since.IsZero() || t.Before(w.Since) {
			w.Since = t
		}
	}
	for _, q := range f.Queue {
		w.Queued++
		oldest(q.Since)
	}
	for _, h := range f.Hosts {
		switch {
		case h.Alive && h.Waiting > 0:
			w.OnHosts += h.Waiting
			oldest(h.OldestWait)
		case !h.Alive && h.Working+h.Waiting > 0:
			w.Stranded += h.Working + h.Waiting
			oldest(h.HeartbeatAt)
		}
	}
	return w
}

// Describe says what the host's slots hold, in a line: "2 agents working and 1 idle of 4; 1 run waiting for a
// slot (for 2m); 7 working copies held".
func (h HostSlots) Describe(now time.Time) string {
	s := fmt.Sprintf("%d %s working and %d idle of %d", h.Working, plural(h.Working, "agent", "agents"), h.Idle, h.MaxConcurrent)
	if h.MaxConcurrent <= 0 {
		s = fmt.Sprintf("%d %s working and %d idle (no poll.max_concurrent)", h.Working, plural(h.Working, "agent", "agents"), h.Idle)
	}
	if h.Waiting > 0 {
		s += fmt.Sprintf("; %d %s waiting for a slot (for %s)", h.Waiting, plural(h.Waiting, "run", "runs"), Ago(now, h.OldestWait))
	}
	return s + fmt.Sprintf("; %d working %s held", h.Held, plural(h.Held, "copy", "copies"))
}

// DescribeQueue says in a line what waits for a slot over the fleet: "queue: 3 issues waiting for a slot (2
// labelled and not started, 1 on a host), the oldest for 5m".
func (f Fleet) DescribeQueue(now time.Time) string {
	w := f.Waiting()
	if w.Issues() == 0 {
		return "queue: empty, every issue has a slot"
	}
	parts := []string{fmt.Sprintf("%d labelled and not started", w.Queued), fmt.Sprintf("%d on a host", w.OnHosts)}
	if w.Stranded > 0 {
		parts = append(parts, fmt.Sprintf("%d on a dead host, to be moved", w.Stranded))
	}
	return fmt.Sprintf("queue: %d %s waiting for a slot (%s), the oldest for %s", w.Issues(),
		plural(w.Issues(), "issue", "issues"), strings.Join(parts, ", "), Ago(now, w.Since))
}

// Ago says how long ago t was the way people read ages: 45s, 12m, 3h, 2d.
func Ago(now, t time.Time) string {
	switch d := now.Sub(t); {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// AgentLine says in a few words what a run's agent is to its host's slots: "working", "idle" (kept while nobody
// needs its slot), "giving way", "released" (stopped for its slot, its conversation kept), "between turns" (a
// headless agent's process ends with its turn), "waiting for a slot"; empty for a run that ended.
func AgentLine(r *store.Run) string {
	switch {
	case r.Status.Terminal():
		return ""
	case r.Slot == store.SlotWork:
		return "working"
	case r.Slot == store.SlotIdle:
		return "idle"
	case r.Slot == store.SlotEvict:
		return "giving way"
	case r.Slot == store.SlotWait:
		return "waiting for a slot"
	case waits(r) && Describe(r).IdleProcess():
		return "released"
	case waits(r):
		return "between turns"
	}
	return ""
}
