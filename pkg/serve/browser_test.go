package serve

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aceworks/ace/internal/testkit"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// browser starts a headless Chromium for one test (Debian's package) and ends its process group by PID when
// the test ends. It skips without Chromium, and fails under CI, where the browser tests must run.
func browser(t *testing.T) context.Context {
	t.Helper()
	var bin string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed (apt-get install chromium): the dashboard's browser tests must run in CI")
		}
		t.Skip("chromium is not installed (apt-get install chromium): skipping the dashboard's browser test")
	}
	// Everything the browser writes goes under the test's directory: killed, it removes nothing itself (its
	// singleton socket's org.chromium.Chromium.* directory in $TMPDIR, its profile, its crash dumps).
	own := t.TempDir()
	dirs := map[string]string{}
	for _, d := range []string{"profile", "crashes", "tmp"} {
		dirs[d] = filepath.Join(own, d)
		if err := os.Mkdir(dirs[d], 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var pid int
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(dirs["profile"]), chromedp.WindowSize(1480, 920),
		chromedp.Flag("crash-dumps-dir", dirs["crashes"]), chromedp.Env("TMPDIR=" + dirs["tmp"]),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser, for as long as bctx lives
		cancel()
		acancel()
		t.Fatalf("start chromium: %v", err)
	}
	if p := chromedp.FromContext(bctx).Browser.Process(); p != nil {
		pid = p.Pid
	}
	ctx, tcancel := context.WithTimeout(bctx, 60*time.Second)
	t.Cleanup(func() {
		tcancel()
		cancel()
		acancel()
		if pid > 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // the browser's helpers share its process group
			// They are gone before the directories they write in are removed (an earlier cleanup: LIFO).
			testkit.WaitFor(t, "the browser's processes to end", 10*time.Second, func() bool {
				return errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH)
			})
		}
	})
	return ctx
}

func screenshot(t *testing.T, ctx context.Context, name string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return png
}

// TestDashboardInBrowser: a fleet of runs in a real Chromium: the table lists them with the ones needing a
// person first, a click shows the run's live screen, its question and the actions; a run event changes the
// table live; sending text reaches the engine.
func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(o *Options) { o.Host = "build-01" },
		"active/monitor", "waiting_input/waiting_input", "active/monitor", "failed/failed", "done/done/pr", "active/deliver_prompt",
		"active/monitor/pr", "done/done/pr", "cancelled/cancelled", "active/start_session", "done/done/pr", "active/monitor")
	f.eng.screen = strings.Join([]string{
		"╭──────────────────────────────────────────────╮",
		"│ ✻ Welcome to the fake agent                    │",
		"╰──────────────────────────────────────────────╯",
		"",
		"> Read ACE_TASK.md and do what it asks.",
		"",
		"● Reading ACE_TASK.md: add a greeting to GREETING.md",
		"● Write(GREETING.md)",
		"  └  Wrote 1 line to GREETING.md",
		"● Bash(git add GREETING.md && git commit -m \"Add a greeting (#101)\")",
		"  └  [ace/101-add-a-greeting 3f2c1aa] Add a greeting (#101)",
		"",
		"✻ Working… (12s · esc to interrupt)",
		"",
		"› ",
	}, "\n")
	ctx := browser(t)
	waiting := itoa(int(f.runs[101].ID))
	err := chromedp.Do(ctx,
		chromedp.Navigate(f.http.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#live[data-state="live"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#runs tbody tr.run").length === 12`),
		chromedp.Click(chromedp.CSS(`#runs tbody tr[data-id="`+waiting+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#screen").textContent.includes("esc to interrupt")`),
	)
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#runs tbody tr.run").length`))
	if err != nil {
		t.Fatal(err)
	}
	first, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#runs tbody tr.run:first-child .issue`)))
	if err != nil {
		t.Fatal(err)
	}
	question, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#d-question`)))
	if err != nil {
		t.Fatal(err)
	}
	if rows != 12 {
		t.Errorf("%d runs in the table, want 12", rows)
	}
	if !strings.Contains(first, "#101") {
		t.Errorf("first row %q, want the run waiting for input (#101) on top", first)
	}
	if !strings.Contains(question, "formal or casual") {
		t.Errorf("question %q", question)
	}
	png := screenshot(t, ctx, "dashboard.png")
	if os.Getenv("ACE_UPDATE_SCREENSHOT") != "" {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A run event turns another run to failed: its row changes without a reload.
	r := *f.runs[100]
	r.Status, r.Step, r.Error = store.StatusFailed, "failed", "the agent exited"
	if err := f.st.UpdateRun(t.Context(), &r, nil); err != nil {
		t.Fatal(err)
	}
	f.eng.publish(workflow.Progress{Run: &r, Kind: workflow.EventStep, Step: workflow.StepFailed})
	id := itoa(int(r.ID))
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.querySelector('#runs tr[data-id="`+id+`"] .badge').textContent === "failed"`)); err != nil {
		t.Fatalf("the table did not follow the event: %v", err)
	}
	// Text typed in the send box reaches the agent.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#send-text`), "casual, please\r"), // Enter submits the form
		chromedp.Poll[chromedp.Void](`document.querySelector("#d-msg").textContent === "Sent."`),
	)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if got := f.eng.done(); len(got) != 1 || got[0] != "send casual, please" {
		t.Fatalf("engine actions %q", got)
	}
	screenshot(t, ctx, "dashboard-after-send.png")
}
