package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// usage is the CPU this process has used so far: its own, and its reaped children's (git, tmux commands).
type usage struct{ self, children time.Duration }

func cpuNow() usage {
	var self, ch syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ch)
	return usage{rusageCPU(self), rusageCPU(ch)}
}

func (a usage) sub(b usage) usage { return usage{a.self - b.self, a.children - b.children} }

func rusageCPU(r syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// rssKiB reads this process's resident set size from /proc/self/status.
func rssKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// rssSampler samples the RSS every 100 ms until stopped: its peak and mean over a phase.
type rssSampler struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak int64
	sum  int64
	n    int64
}

func sampleRSS() *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			v := rssKiB()
			s.mu.Lock()
			s.peak, s.sum, s.n = max(s.peak, v), s.sum+v, s.n+1
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// end stops sampling and returns the peak and mean RSS in KiB.
func (s *rssSampler) end() (peak, mean int64) {
	close(s.stop)
	<-s.done
	return s.peak, s.sum / max(s.n, 1)
}

// liveRunTime sums, over runs, the time each was unfinished within [from, to]; and finds the most unfinished at
// once.
func liveRunTime(runs []*store.Run, from, to time.Time) (total time.Duration, peak int) {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, r := range runs {
		start, end := r.CreatedAt, to
		if r.FinishedAt != nil && r.FinishedAt.Before(to) {
			end = *r.FinishedAt
		}
		if start.Before(from) {
			start = from
		}
		if end.After(start) {
			total += end.Sub(start)
			edges = append(edges, edge{start, 1}, edge{end, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	n := 0
	for _, e := range edges {
		n += e.delta
		peak = max(peak, n)
	}
	return total, peak
}

// percentile is the nearest-rank p-th percentile of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// trackerCounts reads the tracker's files: pull requests per issue (by their head branch, ace/<issue>-…), and
// ace's status comments per issue.
func trackerCounts(ctx context.Context, w *world, issues []int) (prs, comments map[int]int, err error) {
	prs, comments = map[int]int{}, map[int]int{}
	paths, err := filepath.Glob(filepath.Join(w.trackerDir, "pulls", "*.md"))
	if err != nil {
		return nil, nil, err
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			head, ok := strings.CutPrefix(line, `head = "ace/`)
			if !ok {
				continue
			}
			num, _, _ := strings.Cut(head, "-")
			if n, err := strconv.Atoi(num); err == nil {
				prs[n]++
			}
		}
	}
	for _, n := range issues {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		files, err := filepath.Glob(filepath.Join(w.trackerDir, "issues", strconv.Itoa(n)+".comments", "*.md"))
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, nil, err
			}
			if strings.Contains(string(b), workflow.StatusMarker) {
				comments[n]++
			}
		}
	}
	return prs, comments, nil
}

// inversions counts the runs created before an older issue's (issues are numbered oldest first).
func inversions(order []int) int {
	n := 0
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			n++
		}
	}
	return n
}
