package runbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/egress"
	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// One egress proxy per boxed run, served by the ace process that works the run: started when the agent starts,
// by the first step of the run after this process took its host's runs over (the engine's StartProxies), again if its
// allow list changed. Every connection is reported to the run's events — each refusal, each destination let out
// once — and counted into the run's BoxState at the run's next step, which the status comment and ace show read.
// Beside the proxy's socket the same process serves the report socket its boxes report their file attempts to
// (files.go).

// runProxy is one run's proxy and what it saw since the run's state last took it in.
type runProxy struct {
	sock   string
	allow  string // the list it serves, joined: another list means a new proxy
	cancel context.CancelFunc
	done   chan struct{}
	px     *egress.Proxy // its live traffic counts (Traffic)

	// named says what named each destination of the allow list; model are the model's destinations (a loopback
	// one at 127.0.0.1, where the box's forwarder tunnels), by what named them. Both are fixed once it serves.
	named, model map[string]string

	mu             sync.Mutex
	reached        map[string]bool // destinations already recorded
	refusals       map[string]int  // refusals per destination, recorded up to maxRefusalEvents each
	unreachable    map[string]int  // connections let out but not made, per destination
	newRefused     []string        // refused destinations since the last sync, one per connection
	newUnreachable []string
	newReached     []string
	failing        map[string]*Failure // destinations whose connections fail, since they last worked
	modelAnswered  bool                // a connection to the model worked since the last sync
	files          *fileRecords        // the boxes' file attempts (files.go)
}

// Failure is a destination's connections failing since it last worked: how many, the last error.
type Failure struct {
	Dest string
	N    int
	Err  string
}

const (
	// maxRefusalEvents bounds the events recorded for one refused destination per proxy: an agent retrying in a
	// loop must not fill the store. Every refusal is still counted.
	maxRefusalEvents = 20
	// maxUnreachableEvents bounds the events recorded for one destination the proxy could not reach: a CLI retries
	// its model for minutes. Every failure is still counted, and the run's reach state follows them.
	maxUnreachableEvents = 3
	// maxRefusedTo and maxReached bound the destinations a run's state names.
	maxRefusedTo = 10
	maxReached   = 100
)

// Ensure serves the run's proxy, unless this process serves it already with the run's allow list.
func (sb *Boxes) Ensure(ctx context.Context, r *store.Run) error {
	box := r.State.Box
	if box == nil || box.Proxy == "" {
		return nil
	}
	prof, err := sb.o.Profile(r)
	if err != nil {
		return err
	}
	list := sb.allowed(r, prof, sb.o.Config.SandboxFor(r.Agent, r.Repo))
	allow := sb.allow(r, prof, sb.o.Config.SandboxFor(r.Agent, r.Repo))
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
	if err := SocketDir(sb.o.Root, box.Proxy); err != nil {
		return fmt.Errorf("egress proxy of run %d: %w", r.ID, err)
	}
	ln, err := egress.ListenUnix(box.Proxy)
	if err != nil {
		return fmt.Errorf("egress proxy of run %d: %w", r.ID, err)
	}
	rln, err := egress.ListenUnix(ReportSocket(box.Proxy))
	if err != nil {
		ln.Close()
		return fmt.Errorf("report socket of run %d: %w", r.ID, err)
	}
	p := &runProxy{sock: box.Proxy, allow: key, done: make(chan struct{}), reached: map[string]bool{}, refusals: map[string]int{},
		unreachable: map[string]int{}, failing: map[string]*Failure{}, named: map[string]string{}, model: map[string]string{},
		files: newFileRecords(box)}
	for _, a := range list {
		if _, ok := p.named[a.dest]; !ok {
			p.named[a.dest] = a.from
		}
	}
	for _, a := range modelDests(prof, sb.endpoints(prof)) {
		p.model[a.dest] = a.from
	}
	for _, d := range box.Reached {
		p.reached[d] = true
	}
	px, err := egress.New(egress.Options{Allow: allow, Report: sb.report(p, r.ID), Connected: p.connected})
	if err != nil {
		ln.Close()
		rln.Close()
		return &noBox{fmt.Errorf("egress proxy of run %d: %w", r.ID, err)}
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
				sb.o.Logger.Warn("the box's report socket stopped", "run", r.ID, "err", err)
			}
		})
		if err := px.Serve(pctx, ln); err != nil {
			sb.o.Logger.Warn("egress proxy stopped", "run", r.ID, "err", err)
		}
		cancel() // the proxy gone, the box reports to nobody: end both alike
		wg.Wait()
	}()
	if sb.proxies == nil {
		sb.proxies = map[int64]*runProxy{}
	}
	sb.proxies[r.ID] = p
	sb.o.Logger.DebugContext(ctx, "egress proxy serving", "run", r.ID, "socket", box.Proxy, "allow", allow)
	return nil
}

func (p *runProxy) stop() {
	p.cancel()
	<-p.done
}

// report records each connection of run id's proxy: every refusal (up to maxRefusalEvents per destination), every
// destination it could not reach (up to maxUnreachableEvents each), each destination let out once.
func (sb *Boxes) report(p *runProxy, id int64) func(egress.Event) {
	return func(ev egress.Event) {
		dest := ev.Addr()
		p.mu.Lock()
		record, n := false, 0
		switch {
		case !ev.Allowed:
			p.refusals[dest]++
			n = p.refusals[dest]
			p.newRefused = append(p.newRefused, dest)
			record = n <= maxRefusalEvents
		case ev.Status == http.StatusBadGateway:
			p.unreachable[dest]++
			n = p.unreachable[dest]
			p.newUnreachable = append(p.newUnreachable, dest)
			record = n <= maxUnreachableEvents
			f := p.failing[dest]
			if f == nil {
				f = &Failure{Dest: dest}
				p.failing[dest] = f
			}
			f.N++
			if ev.Err != nil {
				f.Err = ev.Err.Error()
			}
		default:
			delete(p.failing, dest)
			if _, ok := p.model[dest]; ok {
				p.modelAnswered = true
			}
			if !p.reached[dest] {
				p.reached[dest] = true
				p.newReached = append(p.newReached, dest)
				record = true
			}
		}
		p.mu.Unlock()
		if !record {
			return
		}
		data, _ := json.Marshal(egressData{Method: ev.Method, Host: ev.Host, Port: ev.Port, Allowed: ev.Allowed,
			Status: ev.Status, Up: ev.Up, Down: ev.Down, Millis: ev.Duration.Milliseconds()})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sb.o.Store.AppendEvent(ctx, id, store.Event{Kind: EventEgress, Message: egressMessage(ev, n, p.named[dest]), Data: string(data)}); err != nil {
			sb.o.Logger.Warn("record a connection of the box", "run", id, "err", err)
		}
	}
}

// connected takes in a connection that reached its destination, as soon as it did: the destination works
// again, and a connection to the model is its answer (a CLI may hold it open for its whole life).
func (p *runProxy) connected(ev egress.Event) {
	dest := ev.Addr()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.failing, dest)
	if _, ok := p.model[dest]; ok {
		p.modelAnswered = true
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

// egressMessage says what became of a connection: n is the destination's count of refusals, or of failures, so
// far; named what allowed it.
func egressMessage(ev egress.Event, n int, named string) string {
	what := strings.TrimSpace(ev.Method + " " + ev.Addr())
	switch {
	case !ev.Allowed && errors.Is(ev.Err, egress.ErrRefused):
		msg := fmt.Sprintf("refused %s: not on the run's allow list; to allow it, add to ace.toml: [sandbox] allow = [%q]", what, ev.Addr())
		if n == maxRefusalEvents {
			msg += fmt.Sprintf("; further refusals of %s are counted, not recorded", ev.Addr())
		}
		return msg
	case !ev.Allowed:
		return fmt.Sprintf("refused a request the proxy could not read: %v", ev.Err)
	case ev.Status == http.StatusBadGateway:
		msg := fmt.Sprintf("could not reach %s (allowed", what)
		if named != "" {
			msg += ": " + named
		}
		msg += fmt.Sprintf("): %v", ev.Err)
		if hint := UnreachableHint(ev.Addr(), fmt.Sprint(ev.Err)); hint != "" {
			msg += " — " + hint
		}
		if n == maxUnreachableEvents {
			msg += fmt.Sprintf("; further failures to reach %s are counted, not recorded", ev.Addr())
		}
		return msg
	case ev.Err != nil:
		return fmt.Sprintf("allowed %s, which ended with an error (%d): %v", what, ev.Status, ev.Err)
	}
	return fmt.Sprintf("reached %s (%d, %d B up, %d B down; later connections to it are not recorded)", what, ev.Status, ev.Up, ev.Down)
}

// Keep is the proxies' part of every step of a run (the engine's): the run's state takes in what its proxy saw,
// a boxed unfinished run has its proxy (served by this process), a finished one has none. It returns what the
// proxy saw of the model, for the run's reach state; boxed is false for a run that never had a box.
func (sb *Boxes) Keep(ctx context.Context, r *store.Run) (seen Seen, boxed bool) {
	box := r.State.Box
	if box == nil {
		return Seen{}, false
	}
	seen = sb.sync(r)
	if r.Status.Terminal() || box.Proxy == "" {
		sb.stop(r.ID)
		if r.Status.Terminal() && box.Proxy != "" {
			// Nothing listens there again: a directory outside root would stay in the temporary one.
			if err := RemoveSocketDir(sb.o.Root, box.Proxy); err != nil {
				sb.o.Logger.WarnContext(ctx, "remove the box's socket directory", "run", r.ID, "err", err)
			}
		}
		return seen, true
	}
	if err := sb.Ensure(ctx, r); err != nil {
		sb.o.Logger.WarnContext(ctx, "serve the box's egress proxy", "run", r.ID, "err", err)
	}
	return seen, true
}

// Seen is what a run's proxy saw of the model since the last sync: whether a connection to it worked, and the
// model's destinations whose connections fail (what the box knows of the agent reaching its model).
type Seen struct {
	Answered bool
	Failing  []Failure
	Named    map[string]string // what named each failing destination
}

// sync adds what the run's proxy saw since the last sync to its BoxState, and returns what it saw of the model.
func (sb *Boxes) sync(r *store.Run) Seen {
	sb.mu.Lock()
	p := sb.proxies[r.ID]
	sb.mu.Unlock()
	if p == nil {
		return Seen{}
	}
	p.mu.Lock()
	refused, reached, unreachable := p.newRefused, p.newReached, p.newUnreachable
	p.newRefused, p.newReached, p.newUnreachable = nil, nil, nil
	seen := Seen{Answered: p.modelAnswered, Named: p.model}
	p.modelAnswered = false
	for _, f := range p.failing {
		if _, ok := p.model[f.Dest]; ok {
			seen.Failing = append(seen.Failing, *f)
		}
	}
	p.mu.Unlock()
	box := r.State.Box
	p.files.sync(box)
	box.Refused += len(refused)
	box.RefusedTo = addSome(box.RefusedTo, refused, maxRefusedTo)
	box.Unreachable += len(unreachable)
	box.UnreachableTo = addSome(box.UnreachableTo, unreachable, maxRefusedTo)
	box.Reached = addSome(box.Reached, reached, maxReached)
	return seen
}

// addSome adds the destinations of more that list does not name yet, up to max in all.
func addSome(list, more []string, max int) []string {
	for _, d := range more {
		if !slices.Contains(list, d) && len(list) < max {
			list = append(list, d)
		}
	}
	return list
}

// stop ends the run's proxy, if this process serves it.
func (sb *Boxes) stop(id int64) {
	sb.mu.Lock()
	p := sb.proxies[id]
	delete(sb.proxies, id)
	sb.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// Close ends every proxy this process serves (the process is going; the boxes stay, and a restarted ace serves
// their proxies anew at the same sockets), and removes root's short socket directory if no run's is left in it.
func (sb *Boxes) Close() {
	sb.mu.Lock()
	ps := sb.proxies
	sb.proxies, sb.closed = nil, true
	sb.mu.Unlock()
	for _, p := range ps {
		p.stop()
	}
	if err := RemoveShortDirs(sb.o.Root); err != nil {
		sb.o.Logger.Warn("remove the sockets' directory", "err", err)
	}
}

// Traffic is what the run's proxy relayed so far; ok is false when this process serves no proxy for it.
func (sb *Boxes) Traffic(id int64) (up, down int64, ok bool) {
	sb.mu.Lock()
	p := sb.proxies[id]
	sb.mu.Unlock()
	if p == nil || p.px == nil {
		return 0, 0, false
	}
	up, down = p.px.Traffic()
	return up, down, true
}
