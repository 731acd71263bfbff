package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/egress"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// One egress proxy per boxed run, served by the ace process that works the run: started when the agent starts,
// by the first step of the run after this process took its host's runs over (StartProxies), again if its
// allow list changed. Every connection is reported to the run's events — each refusal, each destination let out
// once — and counted into the run's BoxState at the run's next step, which the status comment and ace show read.
// Beside the proxy's socket the same process serves the report socket its boxes report their file attempts to
// (box_files.go).

// runProxy is one run's proxy and what it saw since the run's state last took it in.
type runProxy struct {
	sock   string
	allow  string // the list it serves, joined: another list means a new proxy
	cancel context.CancelFunc
	done   chan struct{}
	px     *egress.Proxy // its live traffic counts (liveness.go)

	mu         sync.Mutex
	reached    map[string]bool // destinations already recorded
	refusals   map[string]int  // refusals per destination, recorded up to maxRefusalEvents each
	newRefused []string        // refused destinations since the last sync, one per connection
	newReached []string
	files      *fileRecords // the boxes' file attempts (box_files.go)
}

const (
	// maxRefusalEvents bounds the events recorded for one refused destination per proxy: an agent retrying in a
	// loop must not fill the store. Every refusal is still counted.
	maxRefusalEvents = 20
	// maxRefusedTo and maxReached bound the destinations a run's state names.
	maxRefusedTo = 10
	maxReached   = 100
)

// ensure serves the run's proxy, unless this process serves it already with the run's allow list.
func (sb *sandboxes) ensure(ctx context.Context, r *store.Run) error {
	e := sb.e
	box := r.State.Box
	if box == nil || box.Proxy == "" {
		return nil
	}
	prof, err := e.agent.profile(r)
	if err != nil {
		return err
	}
	allow := sb.allow(r, prof, e.cfg.SandboxFor(r.Agent, r.Repo))
	key := strings.Join(allow, " ")
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.closed {
		return errors.New("the engine is closed: no proxy for the run's box")
	}
	if p := sb.proxies[r.ID]; p != nil {
		select {
		case <-p.done:
		default:
			if p.allow == key && p.sock == box.Proxy {
				return nil
			}
		}
		p.stop()
	}
	if err := os.MkdirAll(filepath.Dir(box.Proxy), 0o700); err != nil {
		return fmt.Errorf("egress proxy of run %d: %w", r.ID, err)
	}
	ln, err := egress.ListenUnix(box.Proxy)
	if err != nil {
		return fmt.Errorf("egress proxy of run %d: %w", r.ID, err)
	}
	rln, err := egress.ListenUnix(reportSocket(box.Proxy))
	if err != nil {
		ln.Close()
		return fmt.Errorf("report socket of run %d: %w", r.ID, err)
	}
	p := &runProxy{sock: box.Proxy, allow: key, done: make(chan struct{}), reached: map[string]bool{}, refusals: map[string]int{},
		files: newFileRecords(box)}
	for _, d := range box.Reached {
		p.reached[d] = true
	}
	px, err := egress.New(egress.Options{Allow: allow, Report: sb.report(p, r.ID)})
	if err != nil {
		ln.Close()
		rln.Close()
		return Terminal(fmt.Errorf("egress proxy of run %d: %w", r.ID, err))
	}
	p.px = px
	// The proxy lives as long as the run is boxed in this process, not as long as the step that started it.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	go func() {
		defer close(p.done)
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := sandbox.ServeReports(pctx, rln, sb.fileReport(p, r.ID)); err != nil {
				e.log.Warn("the box's report socket stopped", "run", r.ID, "err", err)
			}
		})
		if err := px.Serve(pctx, ln); err != nil {
			e.log.Warn("egress proxy stopped", "run", r.ID, "err", err)
		}
		cancel() // the proxy gone, the box reports to nobody: end both alike
		wg.Wait()
	}()
	if sb.proxies == nil {
		sb.proxies = map[int64]*runProxy{}
	}
	sb.proxies[r.ID] = p
	e.log.DebugContext(ctx, "egress proxy serving", "run", r.ID, "socket", box.Proxy, "allow", allow)
	return nil
}

func (p *runProxy) stop() {
	p.cancel()
	<-p.done
}

// report records each connection of run id's proxy: every refusal (up to maxRefusalEvents per destination),
// each destination let out once.
func (sb *sandboxes) report(p *runProxy, id int64) func(egress.Event) {
	return func(ev egress.Event) {
		dest := ev.Addr()
		p.mu.Lock()
		record := false
		if !ev.Allowed {
			p.refusals[dest]++
			p.newRefused = append(p.newRefused, dest)
			record = p.refusals[dest] <= maxRefusalEvents
		} else if !p.reached[dest] {
			p.reached[dest] = true
			p.newReached = append(p.newReached, dest)
			record = true
		}
		n := p.refusals[dest]
		p.mu.Unlock()
		if !record {
			return
		}
		data, _ := json.Marshal(egressData{Method: ev.Method, Host: ev.Host, Port: ev.Port, Allowed: ev.Allowed,
			Status: ev.Status, Up: ev.Up, Down: ev.Down, Millis: ev.Duration.Milliseconds()})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sb.e.o.Store.AppendEvent(ctx, id, store.Event{Kind: string(EventEgress), Message: egressMessage(ev, n), Data: string(data)}); err != nil {
			sb.e.log.Warn("record a connection of the box", "run", id, "err", err)
		}
	}
}

// egressData is an egress event's Data: the connection as JSON, for the API and the dashboard.
type egressData struct {
	Method  string `json:"method"`
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Allowed bool   `json:"allowed"`
	Status  int    `json:"status"`
	Up      int64  `json:"up"`
	Down    int64  `json:"down"`
	Millis  int64  `json:"ms"`
}

func egressMessage(ev egress.Event, refusals int) string {
	what := strings.TrimSpace(ev.Method + " " + ev.Addr())
	switch {
	case !ev.Allowed && errors.Is(ev.Err, egress.ErrRefused):
		msg := "refused " + what + ": not on the run's allow list ([sandbox] allow)"
		if refusals == maxRefusalEvents {
			msg += fmt.Sprintf("; further refusals of %s are counted, not recorded", ev.Addr())
		}
		return msg
	case !ev.Allowed:
		return fmt.Sprintf("refused a request the proxy could not read: %v", ev.Err)
	case ev.Err != nil:
		return fmt.Sprintf("allowed %s but could not reach it (%d): %v", what, ev.Status, ev.Err)
	}
	return fmt.Sprintf("reached %s (%d, %d B up, %d B down; later connections to it are not recorded)", what, ev.Status, ev.Up, ev.Down)
}

// keep is the proxies' part of every step (Engine.Step): the run's state takes in what its proxy saw, a boxed
// unfinished run has its proxy (served by this process), a finished one has none.
func (sb *sandboxes) keep(ctx context.Context, r *store.Run) {
	box := r.State.Box
	if box == nil {
		return
	}
	sb.sync(r)
	if r.Status.Terminal() || box.Proxy == "" {
		sb.stop(r.ID)
		return
	}
	if err := sb.ensure(ctx, r); err != nil {
		sb.e.log.WarnContext(ctx, "serve the box's egress proxy", "run", r.ID, "err", err)
	}
}

// sync adds what the run's proxy saw since the last sync to its BoxState.
func (sb *sandboxes) sync(r *store.Run) {
	sb.mu.Lock()
	p := sb.proxies[r.ID]
	sb.mu.Unlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	refused, reached := p.newRefused, p.newReached
	p.newRefused, p.newReached = nil, nil
	p.mu.Unlock()
	box := r.State.Box
	p.files.sync(box)
	box.Refused += len(refused)
	for _, d := range refused {
		if !slices.Contains(box.RefusedTo, d) && len(box.RefusedTo) < maxRefusedTo {
			box.RefusedTo = append(box.RefusedTo, d)
		}
	}
	for _, d := range reached {
		if !slices.Contains(box.Reached, d) && len(box.Reached) < maxReached {
			box.Reached = append(box.Reached, d)
		}
	}
}

// stop ends the run's proxy, if this process serves it.
func (sb *sandboxes) stop(id int64) {
	sb.mu.Lock()
	p := sb.proxies[id]
	delete(sb.proxies, id)
	sb.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// close ends every proxy this process serves (the process is going; the boxes stay, and a restarted ace serves
// their proxies anew at the same sockets).
func (sb *sandboxes) close() {
	sb.mu.Lock()
	ps := sb.proxies
	sb.proxies, sb.closed = nil, true
	sb.mu.Unlock()
	for _, p := range ps {
		p.stop()
	}
}

// StartProxies serves the proxies of this host's unfinished boxed runs: called when this process starts working
// the host's runs, so that a box that outlived the last ace reaches the network again before its run's next step.
func (e *Engine) StartProxies(ctx context.Context) error {
	runs, err := e.o.Store.ListRuns(ctx, store.Filter{Host: e.o.Host, Statuses: []store.Status{store.StatusActive,
		store.StatusWaitingInput, store.StatusPausedLimit}})
	if err != nil {
		return fmt.Errorf("list the host's runs: %w", err)
	}
	var errs []error
	for _, r := range runs {
		if err := e.box.ensure(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close ends what the engine serves in this process: the boxes' proxies.
func (e *Engine) Close() { e.box.close() }
