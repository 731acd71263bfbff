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

func newMetrics(reg *prometheus.Registry, st Store) *metrics {
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
	reg.MustRegister(m.stepSeconds, m.events, m.webhooks, m.streams, &storeCollector{st: st},
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
type storeCollector struct{ st Store }

var (
	runsDesc     = prometheus.NewDesc("ace_runs", "Runs (the latest attempt of each issue) by status.", []string{"status"}, nil)
	attemptsDesc = prometheus.NewDesc("ace_run_attempts", "Every run attempt in the store, by status.", []string{"status"}, nil)
	nudgesDesc   = prometheus.NewDesc("ace_nudges_total", "Nudges sent to agents, over every run in the store.", nil, nil)
	restartsDesc = prometheus.NewDesc("ace_restarts_total", "Agent restarts, over every run in the store.", nil, nil)
	upDesc       = prometheus.NewDesc("ace_store_up", "Whether the store could be read for this scrape.", nil, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{runsDesc, attemptsDesc, nudgesDesc, restartsDesc, upDesc} {
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
}
