package serve

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAPIListsRunsWithEventsScreenAndNoSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, "active/monitor", "failed/failed", "done/done/pr")
	resp := f.do("GET", "/api/v1/runs", "", nil)
	text := body(t, resp)
	if resp.StatusCode != 200 || strings.Contains(text, secretValue) {
		t.Fatalf("GET /api/v1/runs: %d %s", resp.StatusCode, text)
	}
	var list struct{ Runs []Run }
	if err := json.Unmarshal([]byte(text), &list); err != nil || len(list.Runs) != 3 {
		t.Fatalf("runs %s: %v", text, err)
	}
	byIssue := map[int]Run{}
	for _, r := range list.Runs {
		byIssue[r.Issue] = r
	}
	if r := byIssue[101]; r.Status != "failed" || !strings.Contains(r.Error, "***") {
		t.Errorf("the failed run's error is not redacted: %+v", r)
	}
	if r := byIssue[102]; r.PRURL == "" || r.PRState != "open" || r.Host != "build-01" || r.Title == "" {
		t.Errorf("run 102: %+v", r)
	}

	id := itoa(int(f.runs[100].ID))
	var d RunDetail
	resp = f.do("GET", "/api/v1/runs/"+id, "", nil)
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || len(d.Events) != 1 || d.Events[0].Message != "claim → monitor" {
		t.Fatalf("run detail: %+v %v", d, err)
	}
	resp = f.do("GET", "/api/v1/runs/"+id+"/screen", "", nil)
	if s := body(t, resp); resp.StatusCode != 200 || !strings.Contains(s, "working on it") || resp.Header.Get("X-Ace-Screen") != "live" {
		t.Fatalf("screen: %d %q", resp.StatusCode, s)
	}
	for path, want := range map[string]int{"/api/v1/runs/999": 404, "/api/v1/runs/x": 400, "/api/v1/runs/" + id + "/transcript": 404,
		"/api/v1/runs/" + id + "/reboot": 405, "/healthz": 200} {
		if resp := f.do("GET", path, "", nil); resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestActionsReachTheEngine(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(o *Options) { o.MaxBody = 2048 }, "active/monitor", "done/done")
	id := itoa(int(f.runs[100].ID))
	if r := f.do("POST", "/api/v1/runs/"+id+"/send", `{"text":"casual, please"}`, map[string]string{"Content-Type": "application/json"}); r.StatusCode != 200 {
		t.Fatalf("send: %d %s", r.StatusCode, body(t, r))
	}
	if r := f.do("POST", "/api/v1/runs/"+id+"/nudge", "", nil); r.StatusCode != 200 {
		t.Fatalf("nudge: %d", r.StatusCode)
	}
	if r := f.do("POST", "/api/v1/runs/"+id+"/send", "  ", nil); r.StatusCode != 400 {
		t.Errorf("empty send: %d, want 400", r.StatusCode)
	}
	if r := f.do("POST", "/api/v1/runs/"+id+"/send", strings.Repeat("x", 5000), nil); r.StatusCode != 413 {
		t.Errorf("oversized send: %d, want 413", r.StatusCode)
	}
	r := f.do("POST", "/api/v1/runs/"+id+"/stop", "", nil)
	var run Run
	if err := json.NewDecoder(r.Body).Decode(&run); err != nil || r.StatusCode != 200 || run.Status != "cancelled" {
		t.Fatalf("stop: %d %+v %v", r.StatusCode, run, err)
	}
	if r := f.do("POST", "/api/v1/runs/"+itoa(int(f.runs[101].ID))+"/nudge", "", nil); r.StatusCode != 409 {
		t.Errorf("nudge of a finished run: %d, want 409", r.StatusCode)
	}
	want := []string{"send casual, please", "nudge", "stop stopped from the dashboard"}
	if got := f.eng.done(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("engine actions %q, want %q", got, want)
	}
}

func TestSecurity(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{Store: &store.Store{}, Engine: &engine{}, Queue: &queue{}, Addr: "0.0.0.0:7777"}); err == nil {
		t.Fatal("a server on 0.0.0.0 without a token was built")
	}
	f := newFixture(t, func(o *Options) { o.Token = "tok-0123456789" }, "active/monitor")
	id := itoa(int(f.runs[100].ID))
	if r := f.do("GET", "/api/v1/runs", "", nil); r.StatusCode != 401 {
		t.Errorf("no token: %d, want 401", r.StatusCode)
	}
	if r := f.do("GET", "/api/v1/runs", "", map[string]string{"Authorization": "Bearer tok-0123456788"}); r.StatusCode != 401 {
		t.Errorf("wrong token: %d, want 401", r.StatusCode)
	}
	auth := map[string]string{"Authorization": "Bearer tok-0123456789"}
	if r := f.do("GET", "/api/v1/runs", "", auth); r.StatusCode != 200 || strings.Contains(body(t, r), "tok-0123456789") {
		t.Errorf("good token: %d", r.StatusCode)
	}
	if r := f.do("GET", "/healthz", "", nil); r.StatusCode != 200 {
		t.Errorf("healthz needs no token: %d", r.StatusCode)
	}
	// State changes from another origin are refused even with the token (a browser would send the cookie).
	cross := map[string]string{"Authorization": "Bearer tok-0123456789", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
	if r := f.do("POST", "/api/v1/runs/"+id+"/nudge", "", cross); r.StatusCode != 403 {
		t.Errorf("cross-site nudge: %d, want 403", r.StatusCode)
	}
	if len(f.eng.done()) != 0 {
		t.Fatalf("refused requests reached the engine: %q", f.eng.done())
	}
	same := map[string]string{"Authorization": "Bearer tok-0123456789", "Origin": f.http.URL, "Sec-Fetch-Site": "same-origin"}
	if r := f.do("POST", "/api/v1/runs/"+id+"/nudge", "", same); r.StatusCode != 200 {
		t.Errorf("same-origin nudge: %d", r.StatusCode)
	}
	// The dashboard signs in with a form and keeps an HttpOnly cookie.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Post(f.http.URL+"/login", "application/x-www-form-urlencoded", strings.NewReader("token=tok-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == tokenCookie {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil || !cookie.HttpOnly {
		t.Fatalf("login: %d, cookie %+v", resp.StatusCode, cookie)
	}
	req, _ := http.NewRequest("GET", f.http.URL+"/", nil)
	req.AddCookie(cookie)
	if resp, err := client.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("dashboard with the cookie: %v %v", resp, err)
	}
	if resp, err := client.Get(f.http.URL + "/"); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("dashboard without the cookie: %v %v", resp, err)
	}
}

func webhook(f *fixture, event, delivery, payload, secret string) *http.Response {
	return f.do("POST", "/webhook/github", payload, map[string]string{"X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
		"X-Hub-Signature-256": sign(secret, payload), "Content-Type": "application/json", "Origin": "https://github.com"})
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, "active/monitor/pr", "done/done")
	labeled := `{"action":"labeled","label":{"name":"ace"},"repository":{"full_name":"acme/widgets"},"issue":{"number":7}}`
	if r := webhook(f, "issues", "d-1", labeled, "wrong-secret"); r.StatusCode != 401 {
		t.Fatalf("bad signature: %d", r.StatusCode)
	}
	if r := f.do("POST", "/webhook/github", labeled, map[string]string{"X-GitHub-Event": "issues"}); r.StatusCode != 401 {
		t.Fatalf("no signature: %d", r.StatusCode)
	}
	if got := f.q.got(); len(got) != 0 {
		t.Fatalf("unsigned deliveries enqueued %q", got)
	}
	if r := webhook(f, "issues", "d-1", labeled, "hook-secret"); r.StatusCode != 202 {
		t.Fatalf("labeled: %d %s", r.StatusCode, body(t, r))
	}
	if r := webhook(f, "issues", "d-1", labeled, "hook-secret"); r.StatusCode != 200 || !strings.Contains(body(t, r), "duplicate") {
		t.Fatalf("redelivery: %d", r.StatusCode)
	}
	pr := f.runs[100].PRNumber
	events := []struct{ event, payload string }{
		{"issue_comment", `{"action":"created","repository":{"full_name":"acme/widgets"},"issue":{"number":100}}`},
		{"issue_comment", `{"action":"created","repository":{"full_name":"acme/widgets"},"issue":{"number":101}}`}, // run ended
		{"issues", `{"action":"unlabeled","label":{"name":"ace"},"repository":{"full_name":"acme/widgets"},"issue":{"number":100}}`},
		{"pull_request_review", `{"action":"submitted","repository":{"full_name":"acme/widgets"},"pull_request":{"number":` + itoa(pr) + `}}`},
		{"check_suite", `{"action":"completed","repository":{"full_name":"acme/widgets"},"check_suite":{"pull_requests":[{"number":` + itoa(pr) + `}]}}`},
		{"issues", `{"action":"labeled","label":{"name":"bug"},"repository":{"full_name":"acme/widgets"},"issue":{"number":55}}`},
		{"ping", `{"zen":"hi"}`},
	}
	for i, e := range events {
		if r := webhook(f, e.event, "e-"+itoa(i), e.payload, "hook-secret"); r.StatusCode != 202 {
			t.Fatalf("%s: %d %s", e.event, r.StatusCode, body(t, r))
		}
	}
	want := "dispatch|wake acme/widgets#100|wake acme/widgets#100|wake acme/widgets#100|wake acme/widgets#100"
	if got := strings.Join(f.q.got(), "|"); got != want {
		t.Fatalf("enqueued %q, want %q", got, want)
	}
}

func TestEventStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, "active/monitor")
	resp := f.do("GET", "/api/v1/events", "", nil)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(prefix string) string {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stream ended waiting for %q", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return strings.TrimPrefix(l, prefix)
				}
			case <-timeout:
				t.Fatalf("no %q in the stream", prefix)
			}
		}
	}
	next(": ace events") // subscribed
	r := *f.runs[100]
	r.Error = "token " + secretValue
	f.eng.publish(workflow.Progress{Run: &r, Kind: workflow.EventNudge, Step: workflow.StepMonitor, Message: "nudged"})
	if ev := next("event: "); ev != "progress" {
		t.Fatalf("event %q, want progress", ev)
	}
	data := next("data: ")
	var p Progress
	if err := json.Unmarshal([]byte(data), &p); err != nil || p.Kind != "nudge" || p.Run == nil || p.Run.ID != r.ID || strings.Contains(data, secretValue) {
		t.Fatalf("progress %s: %v", data, err)
	}
	// A change made by another process shows as a "run" event.
	fresh := f.runs[100]
	fresh.Status = store.StatusWaitingInput
	if err := f.st.UpdateRun(t.Context(), fresh, nil); err != nil {
		t.Fatal(err)
	}
	if ev := next("event: "); ev != "run" {
		t.Fatalf("event %q, want run", ev)
	}
	if data := next("data: "); !strings.Contains(data, `"status":"waiting_input"`) {
		t.Fatalf("run event %s", data)
	}
}

func TestMetricsParse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, "active/monitor", "active/deliver_prompt", "failed/failed", "done/done/pr")
	r := *f.runs[100]
	f.eng.publish(workflow.Progress{Run: &r, Kind: workflow.EventStep, Step: workflow.StepMonitor})
	f.eng.publish(workflow.Progress{Run: &r, Kind: workflow.EventStep, Step: workflow.StepFinalize})
	webhook(f, "issues", "m-1", `{"action":"labeled","repository":{"full_name":"acme/widgets"},"issue":{"number":9}}`, "hook-secret")
	var families map[string]int
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := f.do("GET", "/metrics", "", nil)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("/metrics does not parse: %v", err)
		}
		families = map[string]int{}
		for name, mf := range mfs {
			for _, m := range mf.Metric {
				switch {
				case m.Gauge != nil:
					lbl := ""
					for _, l := range m.Label {
						lbl += "," + l.GetValue()
					}
					families[name+lbl] = int(m.Gauge.GetValue())
				case m.Counter != nil:
					lbl := ""
					for _, l := range m.Label {
						lbl += "," + l.GetValue()
					}
					families[name+lbl] = int(m.Counter.GetValue())
				case m.Histogram != nil:
					families[name] += int(m.Histogram.GetSampleCount())
				}
			}
		}
		if families["ace_step_duration_seconds"] >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for k, want := range map[string]int{"ace_runs,active": 2, "ace_runs,failed": 1, "ace_runs,done": 1, "ace_nudges_total": 3,
		"ace_step_duration_seconds": 1, "ace_run_events_total,step": 2, "ace_webhook_deliveries_total,issues,dispatched": 1} {
		if families[k] != want {
			t.Errorf("%s = %d, want %d", k, families[k], want)
		}
	}
}

// TestRunViewSaysTheModelIsUnreachable: a run whose agent cannot reach its model says so in the API (the dashboard
// shows it beside the status and in the run's details), and a run that reaches it says nothing.
func TestRunViewSaysTheModelIsUnreachable(t *testing.T) {
	t.Parallel()
	s := &Server{}
	r := &store.Run{Agent: "claude", Status: store.StatusActive, State: store.RunState{Reach: &store.ReachState{
		Since: time.Now(), Retries: 7, Dest: "127.0.0.1:4000", Error: "connection refused"}}}
	if v := s.view(r); !strings.HasPrefix(v.Reach, "claude cannot reach its model (127.0.0.1:4000, 7 retries): connection refused") {
		t.Errorf("reach = %q", v.Reach)
	}
	r.State.Reach = nil
	if v := s.view(r); v.Reach != "" {
		t.Errorf("reach = %q for a run that reaches its model", v.Reach)
	}
}
