package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/queue"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// settle is how long a fleet runs before it is measured: River's clients elect a leader, fetch their queue
// settings and make their first fetches.
const settle = 3 * time.Second

// idle is figure 1's measurement of the whole fleet, idle: the baseline the runs of figure 2 add to.
var (
	idle     delta
	idlePeak int // connections the idle fleet held at its peak
)

// idlePhase measures figure 1: one host alone, then the fleet, both idle.
func idlePhase(ctx context.Context, w *world, o options) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := w.addHosts(ctx, 1); err != nil {
		return err
	}
	// The first dispatch pass lists the repositories' labelled issues (none yet).
	if err := waitUntil(ctx, "the first dispatch pass", func() (bool, error) {
		total, _, _ := w.gh.Counts()
		return total > 0, nil
	}); err != nil {
		return err
	}
	one, conns1, err := w.measure(ctx, o.window)
	if err != nil {
		return err
	}
	_, passes1 := w.visits.between(queue.DispatchArgs{}.Kind(), time.Now().Add(-one.d), time.Now())
	start := time.Now()
	if err := w.addHosts(ctx, o.hosts); err != nil {
		return err
	}
	fmt.Printf("\n%d more hosts started and heartbeating in %s\n", o.hosts-1, time.Since(start).Round(time.Millisecond))
	all, connsN, err := w.measure(ctx, o.window)
	idlePeak = connsN
	if err != nil {
		return err
	}
	_, passesN := w.visits.between(queue.DispatchArgs{}.Kind(), time.Now().Add(-all.d), time.Now())
	idle = all
	n := float64(o.hosts)
	fmt.Printf("\n1. Database load per host, no runs (each fleet measured for %s)\n", o.window)
	fmt.Printf("   %-34s %14s %18s %12s\n", "", "1 host alone", fmt.Sprintf("%d hosts: per host", o.hosts), "all hosts")
	row := func(name string, v1, vn float64, format string) {
		fmt.Printf("   %-34s %14s %18s %12s\n", name, fmt.Sprintf(format, v1), fmt.Sprintf(format, vn/n), fmt.Sprintf(format, vn))
	}
	row("statements/s", one.rate(one.statements), all.rate(all.statements), "%.2f")
	row("write transactions/s", one.rate(one.writeXacts), all.rate(all.writeXacts), "%.2f")
	row("explicit transactions (COMMIT)/s", one.rate(one.commits), all.rate(all.commits), "%.2f")
	row("WAL KiB/s", one.rate(one.walBytes)/1024, all.rate(all.walBytes)/1024, "%.2f")
	row("connections held (mean)", one.meanConns, all.meanConns, "%.2f")
	row("connections held (peak)", float64(conns1), float64(connsN), "%.1f")
	row("postgres CPU, % of one core", pct(one.cpu, one.d), pct(all.cpu, all.d), "%.2f")
	fmt.Printf("   %-34s %14s %18s %12s\n", "mean statement time", ms(one.execMS, one.statements), "",
		ms(all.execMS, all.statements))
	// River's leader enqueues one dispatch job per poll.interval; whichever host fetches it makes the pass.
	fmt.Printf("   dispatch (one pass per %s fleet-wide, %d repositories): %d passes, %d GitHub requests billed + %d 304s; "+
		"a pass took p50 %s, max %s\n", o.poll, o.repos, len(passesN), sum(all.gh.billed), sum(all.gh.notModified),
		pctl(passesN, 50), pctl(passesN, 100))
	fmt.Printf("   %-34s %d passes, %d GitHub requests billed + %d 304s; a pass took p50 %s, max %s\n", "   1 host alone:",
		len(passes1), sum(one.gh.billed), sum(one.gh.notModified), pctl(passes1, 50), pctl(passes1, 100))
	printTop(all, 6)
	return nil
}

// measure snapshots the counters, waits d (after letting the fleet settle), and snapshots them again.
func (w *world) measure(ctx context.Context, d time.Duration) (delta, int, error) {
	select {
	case <-ctx.Done():
		return delta{}, 0, ctx.Err()
	case <-time.After(settle):
	}
	w.stats.resetPeak()
	w.stats.resetMean()
	a, err := w.snap(ctx)
	if err != nil {
		return delta{}, 0, err
	}
	select {
	case <-ctx.Done():
		return delta{}, 0, ctx.Err()
	case <-time.After(d):
	}
	b, err := w.snap(ctx)
	if err != nil {
		return delta{}, 0, err
	}
	d2 := diff(a, b)
	d2.meanConns = w.stats.resetMean()
	return d2, max(w.stats.resetPeak(), b.conns), nil
}

// runsPhase measures figures 2 and 3.
func runsPhase(ctx context.Context, w *world, o options) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	st := w.store()
	w.stats.resetPeak()
	a, err := w.snap(ctx)
	if err != nil {
		return err
	}
	t0 := a.at
	w.label(o.issues)
	nruns := o.issues
	runs := func() ([]*store.Run, error) { return st.ListRuns(ctx, store.Filter{}) }
	at := func(rs []*store.Run, step workflow.Step) int {
		n := 0
		for _, r := range rs {
			if workflow.Step(r.Step) == step {
				n++
			}
		}
		return n
	}
	// Every agent has its prompt and works.
	if err := waitUntil(ctx, "every run monitors its agent", func() (bool, error) {
		rs, err := runs()
		return len(rs) == nruns && at(rs, workflow.StepMonitor) == nruns, err
	}); err != nil {
		return err
	}
	steadyFor := min(o.work/2, 60*time.Second)
	w.stats.resetMean()
	busyPeakBefore := w.stats.resetPeak()
	s1, err := w.snap(ctx)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(steadyFor):
	}
	s2, err := w.snap(ctx)
	if err != nil {
		return err
	}
	steady := diff(s1, s2)
	steady.meanConns = w.stats.resetMean()
	busyPeak := max(w.stats.resetPeak(), s2.conns)
	w.stats.peakAtLeast(max(busyPeakBefore, busyPeak)) // the phase's own peak goes on
	rs, err := runs()
	if err != nil {
		return err
	}
	stillWorking := at(rs, workflow.StepMonitor)

	if err := waitUntil(ctx, "every issue has its pull request", func() (bool, error) {
		return w.prs() >= nruns, nil
	}); err != nil {
		return err
	}
	c, err := w.snap(ctx)
	if err != nil {
		return err
	}
	peak := max(w.stats.resetPeak(), c.conns)
	life := diff(a, c)
	hosts := map[string]int{}
	if rs, err = runs(); err != nil {
		return err
	}
	for _, r := range rs {
		hosts[r.Host]++
	}
	waits, _ := w.visits.between(queue.RunArgs{}.Kind(), t0, c.at)
	dispatchWaits, _ := w.visits.between(queue.DispatchArgs{}.Kind(), t0, c.at)
	sizes, err := w.stats.tableSizes(ctx)
	if err != nil {
		return err
	}

	runsN := float64(nruns)
	// beyond is a count per run, less what the idle fleet did in the same time.
	beyond := func(n, idleN float64, d time.Duration) float64 {
		return (n - idleN*d.Seconds()/idle.d.Seconds()) / runsN
	}
	fmt.Printf("\n2. Database load per run: %d issues labelled at once over %d hosts (poll.max_concurrent %d each), "+
		"agents working %s\n", nruns, o.hosts, max((o.issues+o.hosts-1)/o.hosts, 1), o.work)
	fmt.Printf("   label to the last pull request %s; runs per host %s; connections held at peak %d (idle fleet %d)\n",
		life.d.Round(time.Millisecond), spread(hosts), peak, idleConns(w))
	fmt.Printf("   connections per host: idle %.2f mean, %.1f peak (figure 1); busy, every agent working, %.2f mean, %.1f peak\n",
		idle.meanConns/float64(o.hosts), float64(idlePeak)/float64(o.hosts), steady.meanConns/float64(o.hosts),
		float64(busyPeak)/float64(o.hosts))
	fmt.Printf("   per run, from label to pull request, beyond the idle fleet's load meanwhile (shown beside, for all hosts):\n")
	line := func(name string, n, idleN float64, format string) {
		fmt.Printf("     %-42s %10s   %s\n", name, fmt.Sprintf(format, beyond(n, idleN, life.d)),
			fmt.Sprintf(format, idleN*life.d.Seconds()/idle.d.Seconds()))
	}
	line("statements", float64(life.statements), float64(idle.statements), "%.0f")
	line("write transactions", float64(life.writeXacts), float64(idle.writeXacts), "%.0f")
	line("explicit transactions (COMMIT)", float64(life.commits), float64(idle.commits), "%.0f")
	line("WAL KiB", float64(life.walBytes)/1024, float64(idle.walBytes)/1024, "%.0f")
	line("postgres CPU ms", float64(life.cpu.Milliseconds()), float64(idle.cpu.Milliseconds()), "%.0f")
	lifeRuns, lifeDispatch := life.gh.split()
	fmt.Printf("     %-42s %10.1f\n", "GitHub requests billed (not 304)", float64(sum(lifeRuns.billed))/runsN)
	fmt.Printf("     %-42s %10.1f\n", "GitHub 304s (free)", float64(sum(lifeRuns.notModified))/runsN)
	fmt.Printf("   GitHub requests billed per run, by endpoint (the dispatch passes' lists apart, below):\n")
	for _, r := range top(lifeRuns.billed, 24) {
		fmt.Printf("     %5.2f  %s\n", float64(lifeRuns.billed[r])/runsN, r)
	}
	fmt.Printf("   dispatch passes meanwhile (%s, one per repository and pass): %d billed, %d 304s\n", dispatchList,
		sum(lifeDispatch.billed), sum(lifeDispatch.notModified))
	fmt.Printf("   while every agent works (%s; %d of %d runs still at monitor at its end), per run-minute:\n",
		steady.d.Round(time.Second), stillWorking, nruns)
	perMin := func(n, idleN int64) float64 {
		return (steady.rate(n) - idle.rate(idleN)) / runsN * 60
	}
	fmt.Printf("     %-42s %10.2f   (idle fleet %.0f/min)\n", "statements", perMin(steady.statements, idle.statements),
		idle.rate(idle.statements)*60)
	fmt.Printf("     %-42s %10.2f   (idle fleet %.0f/min)\n", "write transactions", perMin(steady.writeXacts, idle.writeXacts),
		idle.rate(idle.writeXacts)*60)
	steadyRuns, _ := steady.gh.split()
	fmt.Printf("     %-42s %10.2f\n", "GitHub requests billed (dispatch apart)", float64(sum(steadyRuns.billed))/steady.d.Minutes()/runsN)
	fmt.Printf("     %-42s %10.2f\n", "GitHub 304s (free)", float64(sum(steadyRuns.notModified))/steady.d.Minutes()/runsN)
	fmt.Printf("     %-42s %10.2f   (idle fleet %.2f)\n", "postgres CPU, % of one core, all runs", pct(steady.cpu, steady.d),
		pct(idle.cpu, idle.d))
	fmt.Printf("   job fetch latency (River: due to worked), %d run-job visits (%.1f per run): p50 %s, p95 %s, p99 %s, max %s\n",
		len(waits), float64(len(waits))/runsN, pctl(waits, 50), pctl(waits, 95), pctl(waits, 99), pctl(waits, 100))
	fmt.Printf("   dispatch jobs: %d, fetch latency p50 %s, max %s\n", len(dispatchWaits), pctl(dispatchWaits, 50), pctl(dispatchWaits, 100))
	fmt.Printf("   disk per run (tables with their indexes, after %d runs): %s\n", nruns, sizes.perRun(nruns))
	printTop(life, 8)

	if o.followLooks == 0 {
		return nil
	}
	if err := waitUntil(ctx, "every run follows its pull request", func() (bool, error) {
		rs, err := runs()
		return at(rs, workflow.StepFollowPR) == nruns, err
	}); err != nil {
		return err
	}
	f, _, err := w.measure(ctx, time.Duration(o.followLooks)*o.poll)
	if err != nil {
		return err
	}
	looks := float64(o.followLooks)
	perLook := func(n, idleN float64) float64 { return beyond(n, idleN, f.d) / looks }
	fmt.Printf("\n3. Following pull requests: %d runs at follow_pr for %s (%d looks each, one per poll.interval)\n",
		nruns, f.d.Round(time.Second), o.followLooks)
	fRuns, _ := f.gh.split()
	fmt.Printf("   per run and look, beyond the idle fleet: %.2f statements, %.2f write transactions; "+
		"%.2f GitHub requests billed, %.2f 304s (free; dispatch apart)\n",
		perLook(float64(f.statements), float64(idle.statements)), perLook(float64(f.writeXacts), float64(idle.writeXacts)),
		float64(sum(fRuns.billed))/runsN/looks, float64(sum(fRuns.notModified))/runsN/looks)
	for _, r := range top(fRuns.notModified, 8) {
		fmt.Printf("     %5.2f 304s  %s\n", float64(fRuns.notModified[r])/runsN/looks, r)
	}
	fmt.Printf("   postgres CPU %.2f%% of one core (idle fleet %.2f%%)\n", pct(f.cpu, f.d), pct(idle.cpu, idle.d))
	return nil
}

// idleConns is the connections the idle fleet held.
func idleConns(w *world) int {
	n, _ := w.stats.connections(context.Background())
	return n
}

func spread(hosts map[string]int) string {
	var counts []int
	for _, n := range hosts {
		counts = append(counts, n)
	}
	slices.Sort(counts)
	if len(counts) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d to %d (%d hosts)", counts[0], counts[len(counts)-1], len(counts))
}

func printTop(d delta, n int) {
	fmt.Printf("   most frequent statements (%d in all):\n", d.statements)
	for _, q := range d.top[:min(n, len(d.top))] {
		fmt.Printf("     %5.1f%%  %s\n", 100*float64(q.calls)/float64(max(d.statements, 1)), oneLine(q.text, 110))
	}
}

func sortByCalls(qs []qcount) {
	slices.SortFunc(qs, func(a, b qcount) int { return int(b.calls - a.calls) })
}

// oneLine squeezes a statement's whitespace and cuts it to n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func pct(cpu, wall time.Duration) float64 { return 100 * cpu.Seconds() / wall.Seconds() }

func ms(totalMS float64, n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f ms", totalMS/float64(n))
}

// pctl is the nearest-rank p-th percentile of ds.
func pctl(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)].Round(time.Millisecond)
}
