package runbox

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/store"
)

// The connections a box's agent made that cannot succeed in the box (package sandbox records them): a port of
// the box's loopback where nothing listens, an address off the loopback, a name lookup of its own. Each is an
// egress event naming the destination and what to change (up to maxUnreachableEvents per destination), and is
// counted with the connections the proxy could not make.

// connAttempts counts the network attempts of a box's report and returns their events.
func (sb *Boxes) connAttempts(p *runProxy, attempts []sandbox.Attempt) []store.Event {
	var events []store.Event
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range attempts {
		if !a.Kind.Network() {
			continue
		}
		dest := shownPath(a.Path)
		before := p.unreachable[dest]
		p.unreachable[dest] += a.Count
		for range a.Count {
			p.newUnreachable = append(p.newUnreachable, dest)
		}
		if before >= maxUnreachableEvents {
			continue
		}
		host, port, _ := net.SplitHostPort(a.Path)
		n, _ := strconv.Atoi(port)
		data, _ := json.Marshal(egressData{Method: "connect", Host: host, Port: n})
		events = append(events, store.Event{Kind: EventEgress, Message: connMessage(a, dest), Data: string(data)})
	}
	return events
}

// connMessage says what a connection in the box ran into and what would let it through.
func connMessage(a sandbox.Attempt, dest string) string {
	times := ""
	if a.Count > 1 {
		times = fmt.Sprintf(", %d times", a.Count)
	}
	_, port, _ := net.SplitHostPort(a.Path)
	who := "the agent"
	if a.Prog != "" {
		who = "the agent's " + Printable(a.Prog, 20)
	}
	switch a.Kind {
	case sandbox.AttemptLoopback:
		return fmt.Sprintf("%s connected to %s in its box, where nothing listens%s: this machine's port %s is "+
			"not forwarded into the box; to forward it, add to ace.toml: [sandbox] forward = [%s] (ace forwards by itself "+
			"an endpoint named in the agent's env or its CLI's settings)", who, dest, times, port, port)
	case sandbox.AttemptDirect:
		return fmt.Sprintf("%s connected to %s directly%s, which a box cannot: its one way out is ace's proxy "+
			"(HTTPS_PROXY in its environment), which that program did not use", who, dest, times)
	case sandbox.AttemptDNS:
		return fmt.Sprintf("%s looked a name up itself (%s%s), which a box cannot: names go to ace's proxy "+
			"(HTTPS_PROXY in its environment), which resolves them", who, dest, times)
	}
	return fmt.Sprintf("%s's connection to %s cannot succeed in its box (%s)%s", who, dest, Printable(string(a.Kind), 20), times)
}
