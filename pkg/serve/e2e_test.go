package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/cli"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/serve"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestMain lets the test binary be ace itself (the end-to-end test runs `ace demo` and `ace serve`), and play
// the parts tmux panes run: the launcher and the fake agent; it stops the PostgreSQL cluster the tests started.
func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, pgtest.Main, cli.Child, testkit.As("ace", cli.Main)))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func listRuns(t *testing.T, base string) []serve.Run {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/runs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Runs []serve.Run }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Runs
}

func findIssue(runs []serve.Run, issue int) *serve.Run {
	for i := range runs {
		if runs[i].Issue == issue {
			return &runs[i]
		}
	}
	return nil
}

// TestServeEndToEnd: after `ace demo`, `ace serve` lists the demo's run; an issues/labeled webhook with a bad
// signature is refused and starts nothing, the same with a good signature starts a run at once, its redelivery
// is ignored; the run's agent works in tmux, its screen is served, and stop from the API ends the agent.
func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "demo")
	ace := func(args ...string) *exec.Cmd {
		cmd := exec.Command(exe, append([]string{"ace"}, args...)...)
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "ACE_E2E_WEBHOOK_SECRET=e2e-hook-secret-42", "ACE_CONFIG=")
		return cmd
	}
	if out, err := ace("demo", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("ace demo: %v\n%s", err, out)
	}
	cfgPath := filepath.Join(dir, "ace.toml")
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Only the webhook may start the next run: the poll pass at start-up is the last one for an hour.
	fmt.Fprint(f, "\n[serve]\nwebhook_secret_env = \"ACE_E2E_WEBHOOK_SECRET\"\n\n[poll]\ninterval = \"1h\"\n")
	f.Close()
	cfg, _, err := config.Load(cfgPath, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The demo's tmux server is this test's own: end it and every agent it runs.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tmuxops.New(cfg.Tmux.Socket).KillServer(ctx)
	})
	// The next agent works for long: it is there to be stopped.
	if err := os.WriteFile(filepath.Join(dir, "agent-script.txt"), []byte("say Working on it.\nbusy 120s\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	addr := freeAddr(t)
	base := "http://" + addr
	out := &testkit.Buffer{}
	srv := ace("--config", cfgPath, "serve", "--addr", addr)
	srv.Stdout, srv.Stderr = out, out
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = srv.Process.Kill()
			_ = srv.Wait()
		}
	})
	testkit.WaitFor(t, "ace serve answers", 30*time.Second, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	runs := listRuns(t, base)
	if len(runs) != 1 || runs[0].Repo != "demo/hello" || runs[0].Issue != 1 || runs[0].Status != "done" || runs[0].PRURL == "" {
		t.Fatalf("after ace demo, /api/v1/runs = %+v", runs)
	}
	testkit.WaitFor(t, "the start-up dispatch pass", 30*time.Second, func() bool { return strings.Contains(out.String(), "dispatch pass") })

	issue := "+++\ntitle = \"Say goodbye in bye.txt\"\nlabels = [\"ace\"]\nstate = \"open\"\nauthor = \"you\"\nlabeled_by = \"you\"\n+++\nPlease add bye.txt.\n"
	if err := os.WriteFile(filepath.Join(dir, "tracker", "issues", "2.md"), []byte(issue), 0o644); err != nil {
		t.Fatal(err)
	}
	payload := `{"action":"labeled","label":{"name":"ace"},"repository":{"full_name":"demo/hello"},"issue":{"number":2}}`
	post := func(secret, delivery string) int {
		req, _ := http.NewRequest("POST", base+"/webhook/github", strings.NewReader(payload))
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", delivery)
		req.Header.Set("X-Hub-Signature-256", serve.Sign(secret, payload))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("not-the-secret", "delivery-1"); code != 401 {
		t.Fatalf("bad signature: %d, want 401", code)
	}
	time.Sleep(time.Second) // a run started by the refused delivery would show by now
	if r := findIssue(listRuns(t, base), 2); r != nil {
		t.Fatalf("a webhook with a bad signature started %+v", r)
	}
	start := time.Now()
	if code := post("e2e-hook-secret-42", "delivery-1"); code != 202 {
		t.Fatalf("good signature: %d, want 202\n%s", code, out.String())
	}
	var run *serve.Run
	testkit.WaitFor(t, "the labelled issue's run starts", 30*time.Second, func() bool {
		run = findIssue(listRuns(t, base), 2)
		return run != nil
	})
	t.Logf("webhook → run %d started in %s", run.ID, time.Since(start).Round(time.Millisecond))
	if code := post("e2e-hook-secret-42", "delivery-1"); code != 200 {
		t.Fatalf("redelivery: %d, want 200 (ignored)", code)
	}

	testkit.WaitFor(t, "the agent works", 60*time.Second, func() bool {
		run = findIssue(listRuns(t, base), 2)
		return run.Step == "monitor" || run.Status != "active"
	})
	if run.Status != "active" || run.Session == "" {
		t.Fatalf("run %+v, want an agent at work\n%s", run, out.String())
	}
	resp, err := http.Get(fmt.Sprintf("%s/api/v1/runs/%d/screen", base, run.ID))
	if err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	_, _ = screen.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(screen.String(), "Working on it") {
		t.Fatalf("screen: %d %q", resp.StatusCode, screen.String())
	}
	if ctx := maybeBrowser(t); ctx != nil {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"),
			chromedp.Poll[chromedp.Void](`document.querySelectorAll("#runs tbody tr.run").length === 2`)); err != nil {
			t.Fatalf("dashboard of ace serve: %v", err)
		}
		serve.Screenshot(t, ctx, "serve-e2e.png")
	}

	resp, err = http.Post(fmt.Sprintf("%s/api/v1/runs/%d/stop", base, run.ID), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var stopped serve.Run
	_ = json.NewDecoder(resp.Body).Decode(&stopped)
	resp.Body.Close()
	if resp.StatusCode != 200 || stopped.Status != "cancelled" {
		t.Fatalf("stop: %d %+v\n%s", resp.StatusCode, stopped, out.String())
	}
	ok, err := tmuxops.New(cfg.Tmux.Socket).HasSession(context.Background(), run.Session)
	if err != nil || ok {
		t.Fatalf("the agent's session %s is still there after stop (%v)", run.Session, err)
	}

	if err := srv.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waited = true
	if err := srv.Wait(); err != nil {
		t.Fatalf("ace serve ended with %v\n%s", err, out.String())
	}
}

// maybeBrowser is browser for tests whose browser part is optional: nil when Chromium is missing (outside CI).
func maybeBrowser(t *testing.T) context.Context {
	t.Helper()
	if os.Getenv("CI") != "true" {
		if _, err := exec.LookPath("chromium"); err != nil {
			t.Log("chromium is not installed: no dashboard screenshot")
			return nil
		}
	}
	return serve.Browser(t)
}
