package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// alone labels one healthy issue and returns the time from its label to its pull request, once its run ended.
func alone(ctx context.Context, w *world, n int, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0, err := w.label([]issue{{number: n}})
	if err != nil {
		return 0, err
	}
	if err := w.rec.waitFor(ctx, fmt.Sprintf("issue %d has a pull request", n), func() bool { return len(w.rec.prs[n]) > 0 }); err != nil {
		return 0, err
	}
	w.rec.mu.Lock()
	took := w.rec.prs[n][0].Sub(t0)
	w.rec.mu.Unlock()
	return took, w.waitIdle(ctx)
}

// stuckPhase measures figures 1–3.
func stuckPhase(ctx context.Context, dir, exe string, o options) error {
	w, err := newWorld(ctx, dir, exe, worldOptions{maxConcurrent: o.issues, script: healthyScript(o.work),
		splash: 500 * time.Millisecond, keepalive: o.keepalive})
	if err != nil {
		return err
	}
	defer w.close()

	start := time.Now()
	warm, err := alone(ctx, w, 1, o.timeout)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	baseStart := time.Now()
	base, err := alone(ctx, w, 2, o.timeout)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	warmRetries := len(w.rec.retriesSince(start)) - len(w.rec.retriesSince(baseStart))
	baseRetries := len(w.rec.retriesSince(baseStart))

	// The oldest issues get the stuck agent: dispatch takes them first, the worst case for the others.
	var issues []issue
	var all, healthy, stuck []int
	for i := range o.issues {
		is := issue{number: 3 + i, stuck: i < o.stuck}
		issues = append(issues, is)
		all = append(all, is.number)
		if is.stuck {
			stuck = append(stuck, is.number)
		} else {
			healthy = append(healthy, is.number)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	rss0 := rssKiB()
	cpu0 := cpuNow()
	rss := sampleRSS()
	t0, err := w.label(issues)
	if err != nil {
		return err
	}
	err = w.rec.waitFor(wctx, fmt.Sprintf("the %d healthy issues have pull requests", len(healthy)), func() bool {
		n, _ := w.rec.prsOf(healthy)
		return n == len(healthy)
	})
	if err != nil {
		return err
	}
	cpu1 := cpuNow().sub(cpu0)
	rssPeak, rssMean := rss.end()
	w.rec.mu.Lock()
	_, t1 := w.rec.prsOf(healthy)
	first := t1
	for _, n := range healthy {
		if ts := w.rec.prs[n]; ts[0].Before(first) {
			first = ts[0]
		}
	}
	w.rec.mu.Unlock()
	took := t1.Sub(t0)
	ratio := took.Seconds() / base.Seconds()

	fmt.Printf("\n1. %d issues labelled at once, the %d oldest with an agent stuck at startup, max_concurrent %d\n",
		o.issues, o.stuck, o.issues)
	fmt.Printf("   %-58s %9s   (%d step retries)\n", "warm-up issue alone (fills the git mirror)", secs(warm), warmRetries)
	fmt.Printf("   %-58s %9s   (%d step retries)\n", "one healthy issue alone, label → pull request", secs(base), baseRetries)
	fmt.Printf("   %-58s %9s   (first after %s)\n", fmt.Sprintf("%d healthy issues beside %d stuck, label → last pull request",
		len(healthy), len(stuck)), secs(took), secs(first.Sub(t0)))
	fmt.Printf("   %-58s %8.2f×   goal ≤ 1.5×: %s\n", "ratio", ratio, verdict(ratio <= 1.5))
	printRetries(w.rec.retriesSince(t0))

	// 2. Dispatch latency.
	var seenToSession, seenToCreated, createdToPrepared, preparedToSession []time.Duration
	w.rec.mu.Lock()
	missing := 0
	for _, n := range all {
		seen, ok := w.rec.listed[n]
		if !ok || len(w.rec.created[n]) == 0 || len(w.rec.prepared[n]) == 0 || len(w.rec.sessions[n]) == 0 {
			missing++
			continue
		}
		created, prepared, session := w.rec.created[n][0], w.rec.prepared[n][0], w.rec.sessions[n][0]
		seenToSession = append(seenToSession, session.Sub(seen))
		seenToCreated = append(seenToCreated, created.Sub(seen))
		createdToPrepared = append(createdToPrepared, prepared.Sub(created))
		preparedToSession = append(preparedToSession, session.Sub(prepared))
	}
	w.rec.mu.Unlock()
	fmt.Printf("\n2. dispatch latency over the %d issues (%d without a session)    %9s %9s %9s\n", len(seenToSession), missing, "p50", "p95", "max")
	w.rec.mu.Lock()
	if len(w.rec.created[2]) > 0 && len(w.rec.prepared[2]) > 0 && len(w.rec.sessions[2]) > 0 {
		c, p, ss := w.rec.created[2][0], w.rec.prepared[2][0], w.rec.sessions[2][0]
		fmt.Printf("   the issue alone: run created → working copy ready %s, working copy ready → session started %s\n",
			secs(p.Sub(c)), secs(ss.Sub(p)))
	}
	w.rec.mu.Unlock()
	for _, l := range []struct {
		name string
		ds   []time.Duration
	}{
		{"label seen by a dispatch pass → session started", seenToSession},
		{"  of which: label seen → run created", seenToCreated},
		{"  of which: run created → working copy ready (claim, prepare)", createdToPrepared},
		{"  of which: working copy ready → session started", preparedToSession},
	} {
		fmt.Printf("   %-58s %9s %9s %9s\n", l.name, secs(percentile(l.ds, 50)), secs(percentile(l.ds, 95)), secs(percentile(l.ds, 100)))
	}

	// 3. CPU and memory per live run.
	runs, err := w.runs(ctx)
	if err != nil {
		return err
	}
	var phaseRuns []*store.Run
	for _, r := range runs {
		if r.Issue >= 3 {
			phaseRuns = append(phaseRuns, r)
		}
	}
	live, peakLive := liveRunTime(phaseRuns, t0, t1)
	meanLive := live.Seconds() / took.Seconds()
	fmt.Printf("\n3. this process (ace) over figure 1's phase: %s, %.1f runs live on average, %d at most\n", secs(took), meanLive, peakLive)
	fmt.Printf("   %-58s %8.1f%% of one core (itself %.1f%%, its git and tmux commands %.1f%%)\n", "CPU",
		pct(cpu1.self+cpu1.children, took), pct(cpu1.self, took), pct(cpu1.children, took))
	fmt.Printf("   %-58s %8.2f%% of one core (itself %.2f%%)\n", "CPU per live run",
		pct(cpu1.self+cpu1.children, live), pct(cpu1.self, live))
	fmt.Printf("   %-58s %s before, %s mean, %s peak\n", "RSS", mib(rss0), mib(rssMean), mib(rssPeak))
	fmt.Printf("   %-58s %s\n", "RSS per live run (mean over the phase − before) ÷ mean live", mib(int64(float64(rssMean-rss0)/max(meanLive, 1))))
	if len(stuck) > 0 && o.steady > 0 {
		if err := steadyStuck(ctx, w, stuck, o.steady); err != nil {
			return err
		}
	}

	w.rec.mu.Lock()
	var twice, noSession int
	for _, n := range all {
		if len(w.rec.created[n]) > 1 || len(w.rec.sessions[n]) > 1 {
			twice++
		}
		if len(w.rec.sessions[n]) == 0 {
			noSession++
		}
	}
	restarts := w.rec.restarts
	w.rec.mu.Unlock()
	fmt.Printf("   %-58s %d started twice, %d without a session, %d agents restarted\n", "checks", twice, noSession, restarts)
	printWarnings(w)
	return nil
}

// steadyStuck measures the process while only the stuck runs are live: each waits for an agent that never gets
// ready, looked at every deliver poll.
func steadyStuck(ctx context.Context, w *world, stuck []int, d time.Duration) error {
	c0, r0 := cpuNow(), sampleRSS()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	c := cpuNow().sub(c0)
	_, mean := r0.end()
	live := 0
	for _, n := range stuck {
		r, err := w.svc.Store.LatestRun(ctx, repo, n)
		if err != nil {
			return err
		}
		if !r.Status.Terminal() && r.Step == "deliver_prompt" {
			live++
		}
	}
	fmt.Printf("   %-58s %8.2f%% of one core per run (itself %.2f%%), RSS %s\n",
		fmt.Sprintf("then %s with only the %d stuck runs (%d still at deliver_prompt)", d, len(stuck), live),
		pct(c.self+c.children, d)/float64(max(len(stuck), 1)), pct(c.self, d)/float64(max(len(stuck), 1)), mib(mean))
	return nil
}

func pct(cpu, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return cpu.Seconds() / wall.Seconds() * 100
}

// queuedPhase measures figure 4.
func queuedPhase(ctx context.Context, dir, exe string, o options) error {
	w, err := newWorld(ctx, dir, exe, worldOptions{maxConcurrent: o.queuedConcurrent, script: fastScript, keepalive: o.keepalive})
	if err != nil {
		return err
	}
	defer w.close()
	var issues []issue
	var all []int
	for i := 1; i <= o.queued; i++ {
		issues = append(issues, issue{number: i})
		all = append(all, i)
	}
	wctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	rss0, cpu0, rss := rssKiB(), cpuNow(), sampleRSS()
	t0 := time.Now()
	if _, err := w.label(issues); err != nil {
		return err
	}
	err = w.rec.waitFor(wctx, fmt.Sprintf("the %d queued issues have pull requests", len(all)), func() bool {
		n, _ := w.rec.prsOf(all)
		return n == len(all)
	})
	if err != nil {
		w.rec.mu.Lock()
		n, _ := w.rec.prsOf(all)
		w.rec.mu.Unlock()
		printWarnings(w)
		return fmt.Errorf("%w (%d of %d have one)", err, n, len(all))
	}
	if err := w.waitIdle(wctx); err != nil {
		return err
	}
	took := time.Since(t0)
	retries := w.rec.retriesSince(t0)
	cpu := cpuNow().sub(cpu0)
	rssPeak, rssMean := rss.end()

	runs, err := w.runs(ctx)
	if err != nil {
		return err
	}
	runsPer := map[int]int{}
	done := 0
	for _, r := range runs {
		runsPer[r.Issue]++
		if r.Status == store.StatusDone {
			done++
		}
	}
	prs, comments, err := trackerCounts(ctx, w, all)
	if err != nil {
		return err
	}
	w.rec.mu.Lock()
	sessionsPer := map[int]int{}
	for n, ts := range w.rec.sessions {
		sessionsPer[n] = len(ts)
	}
	order := append([]int(nil), w.rec.order...)
	restarts := w.rec.restarts
	w.rec.mu.Unlock()
	live, peakLive := liveRunTime(runs, t0, time.Now())

	exactlyOne := func(m map[int]int) (one, none, more int) {
		for _, n := range all {
			switch c := m[n]; {
			case c == 1:
				one++
			case c == 0:
				none++
			default:
				more++
			}
		}
		return
	}
	fmt.Printf("\n4. %d issues queued at once, max_concurrent %d, agents that finish at once: %s in all (%.2f issues/s)\n",
		o.queued, o.queuedConcurrent, secs(took), float64(o.queued)/took.Seconds())
	fmt.Printf("   %-40s %8s %8s %8s\n", "per issue", "exactly 1", "none", "more")
	ok := true
	for _, row := range []struct {
		name string
		m    map[int]int
	}{
		{"run rows in the store", runsPer},
		{"tmux sessions started", sessionsPer},
		{"pull requests (tracker files)", prs},
		{"status comments (tracker files)", comments},
	} {
		one, none, more := exactlyOne(row.m)
		ok = ok && one == len(all)
		fmt.Printf("   %-40s %8d %8d %8d\n", row.name, one, none, more)
	}
	inv := inversions(order)
	fmt.Printf("   %-40s %d of %d done; %d started out of age order; at most %d live at once (bound %d); %d agents restarted\n",
		"runs", done, len(runs), inv, peakLive, o.queuedConcurrent, restarts)
	ok = ok && inv == 0 && peakLive <= o.queuedConcurrent && done == len(all)
	fmt.Printf("   %-40s %s\n", "none starved, each started exactly once, oldest first", verdict(ok))
	for _, n := range all {
		if runsPer[n] != 1 || sessionsPer[n] != 1 || prs[n] != 1 || comments[n] != 1 {
			fmt.Printf("     issue %d: %d runs, %d sessions started, %d pull requests, %d status comments\n",
				n, runsPer[n], sessionsPer[n], prs[n], comments[n])
		}
	}
	fmt.Printf("   %-40s %.1f%% of one core (itself %.1f%%), %.2f%% per live run; RSS %s before, %s mean, %s peak\n",
		"this process", pct(cpu.self+cpu.children, took), pct(cpu.self, took), pct(cpu.self+cpu.children, live),
		mib(rss0), mib(rssMean), mib(rssPeak))
	printRetries(retries)
	printWarnings(w)
	return nil
}
