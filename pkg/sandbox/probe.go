package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/egress"
)

// Reaching endpoints from a box, as its agent would (ace doctor, ace agents check): `ace __box --probe-dial
// DEST…` connects to each destination the way a CLI in the box does — a port of this machine's loopback at the
// same port of the box's own (where the box forwards it), anything else through the proxy's forwarder with a
// CONNECT (HTTPS_PROXY) — and says what came of it. A TCP connection and no more: nothing is sent to the model.

// probeTimeout bounds one destination's probe: a host that does not answer is unreachable enough.
const probeTimeout = 5 * time.Second

// Reach is what came of connecting to one destination from a box.
type Reach struct {
	Dest string `json:"dest"`
	OK   bool   `json:"ok"`
	// Forwarded: a loopback destination the box forwards (false: nothing listens at its port in the box).
	Forwarded bool `json:"forwarded,omitempty"`
	// Status is the proxy's answer to the CONNECT (200, 403 not on the allow list, 502 not reached); 0 when the
	// probe got no answer.
	Status int `json:"status,omitempty"`
	// Error says why it failed.
	Error string `json:"error,omitempty"`
}

// ProbeReach connects to each of dests (host:port) from a box that s describes, as its agent would, and says
// what came of each. s needs its proxy, which the caller serves with the allow list a run would have.
func (h *Host) ProbeReach(ctx context.Context, s Spec, dests []string) ([]Reach, error) {
	if len(dests) == 0 {
		return nil, nil
	}
	argv := []string{"true"} // not run: the probe ends ace __box
	args := []string{}
	for _, d := range dests {
		args = append(args, "--probe-dial", d)
	}
	s.ReportSocket = ""
	b, err := h.wrapWith(s, argv, args)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout+20*time.Second)
	defer cancel()
	cmd := b.Command(ctx)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sandbox: the reach probe: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var res []Reach
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r Reach
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("sandbox: the reach probe said %q: %w", sc.Text(), err)
		}
		res = append(res, r)
	}
	return res, nil
}

// probeDial is ace __box's side of ProbeReach: each destination connected to, side by side, as the box's agent
// would (the proxy's forwarder listens on listen; sock is the proxy's socket), printed as a JSON line each.
func probeDial(dests []string, listen, sock string) int {
	res := make([]Reach, len(dests))
	var wg sync.WaitGroup
	for i, d := range dests {
		wg.Go(func() { res[i] = dialAsAgent(d, listen, sock) })
	}
	wg.Wait()
	enc := json.NewEncoder(os.Stdout)
	for _, r := range res {
		if err := enc.Encode(r); err != nil {
			return 1
		}
	}
	return 0
}

// dialAsAgent connects to dest as a CLI in the box does: a loopback port directly (the box's forwarder, when it
// forwards it, then tunnels it through the proxy: the probe asks the proxy for that tunnel itself, to learn what
// became of it), anything else through the proxy's forwarder at listen.
func dialAsAgent(dest, listen, sock string) Reach {
	r := Reach{Dest: dest}
	host, port, err := net.SplitHostPort(dest)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	ip := net.ParseIP(host)
	var c net.Conn
	switch {
	case ip != nil && ip.IsLoopback() || strings.EqualFold(host, "localhost"):
		p, _ := strconv.Atoi(port)
		if !listening(p) {
			r.Error = "nothing listens at the box's " + dest + ": this machine's port " + port + " is not forwarded into the box"
			return r
		}
		r.Forwarded = true
		c, err = net.DialTimeout("unix", sock, probeTimeout)
		dest = net.JoinHostPort("127.0.0.1", port) // where the forwarder tunnels it
	default:
		c, err = net.DialTimeout("tcp", listen, probeTimeout)
	}
	if err != nil {
		r.Error = "the box's proxy does not answer: " + err.Error()
		return r
	}
	defer c.Close()
	err = egress.Tunnel(c, dest)
	var refused *egress.RefusedError
	switch {
	case errors.As(err, &refused):
		r.Status, r.Error = refused.Status, refused.Reason
		if r.Error == "" {
			r.Error = refused.Error()
		}
	case err != nil:
		r.Error = err.Error()
	default:
		r.OK, r.Status = true, 200
	}
	return r
}

// listening reports whether a TCP socket of the box listens on port (on any of its addresses: the loopback's,
// or all).
func listening(port int) bool {
	hex := strings.ToUpper(strconv.FormatInt(int64(port), 16))
	hex = strings.Repeat("0", 4-len(hex)) + hex
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open("/proc/net/" + name) // this process's namespace: the box's
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		found := false
		for !found && sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) >= 4 {
				_, p, _ := strings.Cut(fields[1], ":")
				found = fields[3] == "0A" && p == hex // TCP_LISTEN
			}
		}
		f.Close()
		if found {
			return true
		}
	}
	return false
}
