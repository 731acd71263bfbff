package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/aceworks/ace/internal/realcli"
)

// figures is what the benchmark reports (and writes with -json); durations in milliseconds.
type figures struct {
	CLI          string        `json:"cli"`
	Version      string        `json:"version"`
	Set          string        `json:"set"`
	PollMS       int64         `json:"poll_interval_ms"`
	RunsEach     int           `json:"runs_each"`
	CPUs         int           `json:"cpus"`
	LoadAvgStart string        `json:"load_average_start"`
	LoadAvgEnd   string        `json:"load_average_end"`
	Runners      []runnerStats `json:"runners"`
}

// runnerStats are one runner's figures over its successful runs.
type runnerStats struct {
	Runner string `json:"runner"`
	Runs   int    `json:"runs"`
	Failed int    `json:"failed"`
	// AnswerToModel: the human's answer on the issue → the model server receives it.
	AnswerToModel summary `json:"answer_to_model_ms"`
	// AceCPU: ace's process, label → pull request; AceIdle: ace's CPU per second before the label.
	AceCPU         summary `json:"ace_cpu_ms"`
	AceIdlePerSec  summary `json:"ace_idle_cpu_ms_per_s"`
	AceChildrenCPU summary `json:"ace_children_cpu_ms"`
	// HelperCPU: the supervisors' (exec) or the live host's (live) own CPU over the run; Helpers: how many.
	HelperCPU summary `json:"helper_cpu_ms"`
	Helpers   summary `json:"helpers"`
	CLICPU    summary `json:"cli_cpu_ms"`
	TmuxCPU   summary `json:"tmux_server_cpu_ms"`
	Question  summary `json:"label_to_question_ms"`
	Wall      summary `json:"label_to_pr_ms"`
}

// summary is the median and the 90th percentile (nearest rank) of a figure, and every run's value.
type summary struct {
	Median float64   `json:"median"`
	P90    float64   `json:"p90"`
	All    []float64 `json:"all"`
}

func summarize(vs []float64) summary {
	if len(vs) == 0 {
		return summary{All: []float64{}}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := int(float64(len(s))*p/100+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{Median: med, P90: rank(90), All: vs}
}

func figuresOf(c realcli.CLI, o options, runners []string, results map[string][]runResult, loadStart, loadEnd string) figures {
	f := figures{CLI: c.Name, Version: c.Version, Set: c.Set, PollMS: o.poll.Milliseconds(), RunsEach: o.n,
		CPUs: runtime.NumCPU(), LoadAvgStart: loadStart, LoadAvgEnd: loadEnd}
	for _, name := range runners {
		st := runnerStats{Runner: name}
		var answer, ace, idle, children, helper, helpers, cli, tmux, asked, wall []float64
		for _, r := range results[name] {
			if r.err != nil {
				st.Failed++
				continue
			}
			st.Runs++
			msOf := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			answer, ace, idle = append(answer, msOf(r.answer)), append(ace, msOf(r.ace)), append(idle, msOf(r.aceIdle))
			children, helper = append(children, msOf(r.aceChildren)), append(helper, msOf(r.helper))
			helpers, cli, tmux = append(helpers, float64(r.helpers)), append(cli, msOf(r.cli)), append(tmux, msOf(r.tmux))
			asked, wall = append(asked, msOf(r.asked)), append(wall, msOf(r.wall))
		}
		st.AnswerToModel, st.AceCPU, st.AceIdlePerSec = summarize(answer), summarize(ace), summarize(idle)
		st.AceChildrenCPU, st.HelperCPU, st.Helpers = summarize(children), summarize(helper), summarize(helpers)
		st.CLICPU, st.TmuxCPU, st.Question, st.Wall = summarize(cli), summarize(tmux), summarize(asked), summarize(wall)
		f.Runners = append(f.Runners, st)
	}
	return f
}

func printTable(f figures) {
	fmt.Printf("\n%s %s, poll.interval %dms, medians over each runner's successful runs (p90: nearest rank)\n",
		f.CLI, f.Version, f.PollMS)
	fmt.Printf("%-6s %5s  %-26s %10s %10s %12s %10s %10s %10s\n", "runner", "runs", "answer→model median / p90",
		"ace CPU", "ace idle", "helper CPU", "CLI CPU", "tmux CPU", "label→PR")
	for _, r := range f.Runners {
		helper := "–"
		if r.Runner != "tmux" {
			helper = fmt.Sprintf("%.0fms (%.0f)", r.HelperCPU.Median, r.Helpers.Median)
		}
		fmt.Printf("%-6s %2d/%-2d  %-26s %8.0fms %6.1fms/s %12s %8.0fms %8.0fms %9.1fs\n",
			r.Runner, r.Runs, r.Runs+r.Failed,
			fmt.Sprintf("%.0f / %.0f ms", r.AnswerToModel.Median, r.AnswerToModel.P90),
			r.AceCPU.Median, r.AceIdlePerSec.Median, helper, r.CLICPU.Median, r.TmuxCPU.Median, r.Wall.Median/1000)
	}
	fmt.Println("ace CPU: ace's process from the label to the PR (its git and tmux commands apart, in the JSON);",
		"ace idle: its CPU per second before the label, polling with nothing to do (the baseline: a longer run costs more of it);")
	fmt.Println("helper CPU: the exec runner's supervisors (one per turn) or the live runner's host, their own CPU",
		"(how many in parentheses); CLI CPU: the agent CLI with the tools it ran; tmux CPU: the tmux server, label to PR.")
	fmt.Printf("load average at the start %s, at the end %s (%d CPUs)\n", f.LoadAvgStart, f.LoadAvgEnd, f.CPUs)
}

func writeJSON(path string, f figures) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the figures: %w", err)
	}
	return nil
}
