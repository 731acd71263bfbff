package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/aceworks/ace/pkg/procs"
)

// rescueDead makes the jobs that a dead ace process was working available again at once: on this host, a process
// whose PID is gone (kill -9, a crash, a reboot); elsewhere, a host silent for host.dead_after. River rescues a
// stuck job by itself only after RescueStuckJobsAfter (longer than the longest visit), and while a dead process
// holds the dispatch job, no labelled issue starts anywhere. Run jobs of a dead host are not freed here: their
// runs move to a live host (moveRunsOfDeadHosts), whose queue gets a job of its own.
func (q *Queue) rescueDead(ctx context.Context) error {
	res, err := q.client.JobList(ctx, river.NewJobListParams().Queues(q.host, dispatchQueue).
		States(rivertype.JobStateRunning).First(1000))
	if err != nil {
		return fmt.Errorf("list running jobs: %w", err)
	}
	hosts, err := q.st.Hosts(ctx)
	if err != nil {
		return err
	}
	dead := map[string]bool{}
	for _, h := range hosts {
		dead[h.Name] = q.dead(h)
	}
	now := q.now().UTC()
	var p riverdriver.JobRescueManyParams
	for _, j := range res.Jobs {
		if len(j.AttemptedBy) == 0 {
			continue
		}
		by := j.AttemptedBy[len(j.AttemptedBy)-1]
		if !deadLocalClient(by, q.self) && !dead[clientHost(by)] {
			continue
		}
		msg, _ := json.Marshal(rivertype.AttemptError{At: now, Attempt: j.Attempt,
			Error: "the ace process working this job (" + j.AttemptedBy[len(j.AttemptedBy)-1] + ") died"})
		p.ID = append(p.ID, j.ID)
		p.Error = append(p.Error, msg)
		p.FinalizedAt = append(p.FinalizedAt, nil)
		p.ScheduledAt = append(p.ScheduledAt, now)
		p.State = append(p.State, string(rivertype.JobStateAvailable))
	}
	if len(p.ID) == 0 {
		return nil
	}
	p.StuckHorizon = now.Add(time.Hour) // every listed job is stuck: its worker is gone
	if _, err := q.exec.JobRescueMany(ctx, &p); err != nil {
		return fmt.Errorf("free %d job(s) of dead ace processes: %w", len(p.ID), err)
	}
	q.o.Logger.InfoContext(ctx, "freed the jobs of dead ace processes", "jobs", len(p.ID))
	return nil
}

// clientHost is the host part of a River client ID written by clientID.
func clientHost(id string) string {
	i := strings.LastIndexByte(id, ':')
	if i < 0 {
		return ""
	}
	j := strings.LastIndexByte(id[:i], ':')
	if j < 0 {
		return ""
	}
	return id[:j]
}

// deadLocalClient reports whether a River client ID written by clientID names a process of this host that no
// longer exists (its PID is gone, or now belongs to a process started at another time).
func deadLocalClient(id, host string) bool {
	i := strings.LastIndexByte(id, ':')
	if i < 0 {
		return false
	}
	j := strings.LastIndexByte(id[:i], ':')
	if j < 0 || id[:j] != host {
		return false
	}
	pid, err1 := strconv.Atoi(id[j+1 : i])
	start, err2 := strconv.ParseUint(id[i+1:], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return false
	}
	return processStart(pid) != start
}

// processStart is a process's start time in clock ticks since boot (0 when it does not exist): with the PID it
// names one process across PID reuse.
func processStart(pid int) uint64 {
	st, err := procs.Read(pid)
	if err != nil || st.State == 'Z' || st.State == 'X' {
		return 0
	}
	return st.Start
}

// decodeRunArgs reads the issue a run job is for.
func decodeRunArgs(j *rivertype.JobRow) (RunArgs, bool) {
	var a RunArgs
	if j.Kind != (RunArgs{}).Kind() || json.Unmarshal(j.EncodedArgs, &a) != nil {
		return a, false
	}
	return a, true
}

// jobErrors logs what River reports of failing jobs; ace's own step errors are already recorded on the run.
type jobErrors struct{ log *slog.Logger }

func (h *jobErrors) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	h.log.WarnContext(ctx, "job failed", "job", job.ID, "kind", job.Kind, "attempt", job.Attempt, "err", err)
	return nil
}

func (h *jobErrors) HandlePanic(ctx context.Context, job *rivertype.JobRow, v any, trace string) *river.ErrorHandlerResult {
	h.log.ErrorContext(ctx, "job panicked", "job", job.ID, "kind", job.Kind, "panic", v, "trace", trace)
	return nil
}

// quietRiver passes River's own logs on at warning level and above: its routine messages (leadership, producers
// starting) are not news to a user. While the database is away River says the same thing several times a second
// (each producer's fetch, the elector, the periodic enqueuer, the completer): each message is passed on once per
// riverRepeatEvery at most, with how many like it were held back meanwhile.
func quietRiver(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{h: log.Handler(), min: slog.LevelWarn, seen: &repeats{last: map[string]repeat{}}})
}

// riverRepeatEvery is how often one of River's messages is logged at most.
const riverRepeatEvery = time.Minute

type minLevel struct {
	h    slog.Handler
	min  slog.Level
	seen *repeats
}

// repeats remembers when each message was last logged, and how many were held back since.
type repeats struct {
	mu   sync.Mutex
	last map[string]repeat
}

type repeat struct {
	at   time.Time
	held int
}

// pass says whether a message may be logged now, and how many like it were held back before it.
func (r *repeats) pass(msg string, now time.Time) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.last[msg]
	if ok && now.Sub(p.at) < riverRepeatEvery {
		p.held++
		r.last[msg] = p
		return false, 0
	}
	r.last[msg] = repeat{at: now}
	return true, p.held
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}

func (m minLevel) Handle(ctx context.Context, r slog.Record) error {
	ok, held := m.seen.pass(r.Message, time.Now())
	if !ok {
		return nil
	}
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", held))
	}
	return m.h.Handle(ctx, r)
}

func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h: m.h.WithAttrs(a), min: m.min, seen: m.seen}
}
func (m minLevel) WithGroup(n string) slog.Handler {
	return minLevel{h: m.h.WithGroup(n), min: m.min, seen: m.seen}
}
