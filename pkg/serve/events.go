package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// Progress is one typed run event as the event stream carries it ("event: progress").
type Progress struct {
	RunID   int64     `json:"run_id"`
	Kind    string    `json:"kind"`
	Step    string    `json:"step"`
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"time"`
	Run     *Run      `json:"run,omitempty"`
}

// message is one Server-Sent Event, already encoded.
type message []byte

// hub feeds the event streams: the engine's typed events as they are published in this process, and a "run"
// event for every run another process changed (looked for in the store every StorePoll). A stream that does
// not keep up is closed (the browser reconnects and reloads), never waited for.
type hub struct {
	s       *Server
	mu      sync.Mutex
	clients map[chan message]struct{}
}

func newHub(s *Server) *hub { return &hub{s: s, clients: map[chan message]struct{}{}} }

func (h *hub) subscribe() (chan message, func()) {
	ch := make(chan message, 128)
	h.mu.Lock()
	h.clients[ch] = struct{}{}
	h.mu.Unlock()
	h.s.metrics.streams.Inc()
	return ch, func() {
		h.mu.Lock()
		if _, ok := h.clients[ch]; ok {
			delete(h.clients, ch)
			close(ch)
		}
		h.mu.Unlock()
		h.s.metrics.streams.Dec()
	}
}

func (h *hub) broadcast(m message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.clients {
		select {
		case ch <- m:
		default:
			delete(h.clients, ch)
			close(ch)
		}
	}
}

func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.clients {
		delete(h.clients, ch)
		close(ch)
	}
}

// run works until ctx ends.
func (h *hub) run(ctx context.Context) {
	events, unsubscribe := h.s.o.Engine.Subscribe(256)
	defer unsubscribe()
	defer h.closeAll()
	tick := time.NewTicker(h.s.o.StorePoll)
	defer tick.Stop()
	versions := map[int64]int64{}
	h.poll(ctx, versions, false)
	for {
		select {
		case <-ctx.Done():
			return
		case p, ok := <-events:
			if !ok {
				return
			}
			h.s.metrics.observe(p)
			out := Progress{Kind: string(p.Kind), Step: string(p.Step), Message: p.Message, Time: time.Now()}
			if p.Run != nil {
				v := h.s.view(p.Run)
				out.RunID, out.Run = p.Run.ID, &v
			}
			h.broadcast(h.encode("progress", out))
		case <-tick.C:
			h.poll(ctx, versions, true)
		}
	}
}

// poll sends a "run" event for each run whose version changed since the last look.
func (h *hub) poll(ctx context.Context, versions map[int64]int64, send bool) {
	runs, err := h.s.o.Store.ListRuns(ctx, store.Filter{})
	if err != nil {
		if ctx.Err() == nil {
			h.s.log.WarnContext(ctx, "look for run changes", "err", err)
		}
		return
	}
	for _, r := range runs {
		if versions[r.ID] == r.Version {
			continue
		}
		versions[r.ID] = r.Version
		if send {
			h.broadcast(h.encode("run", h.s.view(r)))
		}
	}
}

func (h *hub) encode(event string, v any) message {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{}`)
	}
	return message(fmt.Sprintf("event: %s\ndata: %s\n\n", event, h.s.o.Redactor.Redact(string(b))))
}

// events is GET /api/v1/events: Server-Sent Events "progress" (a typed run event) and "run" (a run changed),
// with a comment every 15s to keep proxies from closing an idle stream.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.writeError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	ch, done := s.hub.subscribe()
	defer done()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n: ace events\n\n")
	flusher.Flush()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case m, ok := <-ch:
			if !ok {
				return // too slow, or the server stops: the client reconnects
			}
			if _, err := w.Write(m); err != nil {
				return
			}
			flusher.Flush()
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}
