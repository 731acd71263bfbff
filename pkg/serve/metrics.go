package serve

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// metrics are the server's own collectors, on its own registry: what the store says at each scrape (runs by
// status, nudges, restarts — true across every ace process) and what this process saw happen (step durations,
// run events, webhook deliveries).
type metrics struct {
	stepSeconds *prometheus.HistogramVec
	events      *prometheus.CounterVec
	webhooks    *prometheus.CounterVec
	streams     prometheus.Gauge

	mu        sync.Mutex
	stepSince map[int64]stepStart // by run: the step it is in and since when, as seen by this process
}

type stepStart struct {
	step  string
	since time.Time
}

func newMetrics(reg *prometheus.Registry, st Store, deadAfter time.Duration) *metrics {
	m := &metrics{
		stepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "ace_step_duration_seconds", Help: "Time runs spent in a step before moving on (steps seen start by this process).",
			Buckets: []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 1800, 3600, 7200},
		}, []string{"step"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ace_run_events_total", Help: "Typed run events published by the engine in this process.",
		}, []string{"kind"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ace_webhook_deliveries_total", Help: "GitHub webhook deliveries by event and outcome.",
		}, []string{"event", "outcome"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ace_event_streams", Help: "Open Server-Sent Event streams.",
		}),
		stepSince: map[int64]stepStart{},
	}
	reg.MustRegister(m.stepSeconds, m.events, m.webhooks, m.streams, &storeCollector{st: st, deadAfter: deadAfter},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe counts a run event and times the step a run leaves.
func (m *metrics) observe(p workflow.Progress) {
	m.events.WithLabelValues(string(p.Kind)).Inc()
	if p.Kind != workflow.EventStep || p.Run == nil {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.stepSince[p.Run.ID]; ok {
		m.stepSeconds.WithLabelValues(prev.step).Observe(now.Sub(prev.since).Seconds())
	}
	if p.Run.Status.Terminal() || p.Step == workflow.StepDone || p.Step == workflow.StepCancelled {
		delete(m.stepSince, p.Run.ID)
		return
	}
	m.stepSince[p.Run.ID] = stepStart{step: string(p.Step), since: now}
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// storeCollector reads the store at each scrape.
type storeCollector struct {
	st        Store
	deadAfter time.Duration // host.dead_after: a host silent that long is not alive
}

var (
	runsDesc     = prometheus.NewDesc("ace_runs", "Runs (the latest attempt of each issue) by status.", []string{"status"}, nil)
	attemptsDesc = prometheus.NewDesc("ace_run_attempts", "Every run attempt in the store, by status.", []string{"status"}, nil)
	nudgesDesc   = prometheus.NewDesc("ace_nudges_total", "Nudges sent to agents, over every run in the store.", nil, nil)
	restartsDesc = prometheus.NewDesc("ace_restarts_total", "Agent restarts, over every run in the store.", nil, nil)
	upDesc       = prometheus.NewDesc("ace_store_up", "Whether the store could be read for this scrape.", nil, nil)
	agentsDesc   = prometheus.NewDesc("ace_agents", "Live agents of each host: working, or idle (kept while nobody needs their slot).",
		[]string{"host", "state"}, nil)
	slotsDesc   = prometheus.NewDesc("ace_slots", "Each live host's poll.max_concurrent: the agents it may run at once.", []string{"host"}, nil)
	waitingDesc = prometheus.NewDesc("ace_runs_waiting_slot", "Runs of each host waiting for a slot (new, moved, a round, an answer).",
		[]string{"host"}, nil)
	queueDesc       = prometheus.NewDesc("ace_queue_issues", "Issues waiting for a slot: labelled and not started, or runs waiting on a live host.", nil, nil)
	queueOldestDesc = prometheus.NewDesc("ace_queue_oldest_wait_seconds", "How long the issue waiting longest for a slot has waited (0: none waits).", nil, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{runsDesc, attemptsDesc, nudgesDesc, restartsDesc, upDesc, agentsDesc, slotsDesc,
		waitingDesc, queueDesc, queueOldestDesc} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	runs, err := c.st.ListRuns(ctx, store.Filter{})
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	statuses := []store.Status{store.StatusActive, store.StatusWaitingInput, store.StatusPausedLimit, store.StatusDone, store.StatusFailed, store.StatusCancelled}
	count := func(rs []*store.Run) map[store.Status]int {
		n := map[store.Status]int{}
		for _, r := range rs {
			n[r.Status]++
		}
		return n
	}
	latest, all := count(store.LatestPerIssue(runs)), count(runs)
	for _, st := range statuses {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(latest[st]), string(st))
		ch <- prometheus.MustNewConstMetric(attemptsDesc, prometheus.GaugeValue, float64(all[st]), string(st))
	}
	var nudges, restarts int
	for _, r := range runs {
		nudges += r.Nudges
		restarts += r.Restarts
	}
	ch <- prometheus.MustNewConstMetric(nudgesDesc, prometheus.CounterValue, float64(nudges))
	ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(restarts))
	c.collectSlots(ctx, ch)
}

// collectSlots exports the slots of the live hosts and the queue's wait.
func (c *storeCollector) collectSlots(ctx context.Context, ch chan<- prometheus.Metric) {
	now := time.Now()
	f, err := workflow.ReadFleet(ctx, c.st, c.deadAfter, now)
	if err != nil {
		return
	}
	for _, h := range f.Hosts {
		if !h.Alive {
			continue
		}
		ch <- prometheus.MustNewConstMetric(agentsDesc, prometheus.GaugeValue, float64(h.Working), h.Name, "working")
		ch <- prometheus.MustNewConstMetric(agentsDesc, prometheus.GaugeValue, float64(h.Idle), h.Name, "idle")
		ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(h.MaxConcurrent), h.Name)
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(h.Waiting), h.Name)
	}
	w := f.Waiting()
	age := 0.0
	if w.Issues() > 0 {
		age = max(0, now.Sub(w.Since).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(w.Issues()))
	ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, age)
}
