package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/transcript"
	"github.com/aceworks/ace/pkg/workflow"
)

// maxTranscript bounds the transcript a response carries: its end, where a person looks.
const maxTranscript = 256 << 10

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { s.writeText(w, http.StatusOK, "ok\n") })
	m.Handle("GET /metrics", s.metricsHandler())
	m.HandleFunc("GET /api/v1/runs", s.listRuns)
	m.HandleFunc("GET /api/v1/runs/{id}", s.getRun)
	m.HandleFunc("GET /api/v1/runs/{id}/screen", s.getScreen)
	m.HandleFunc("GET /api/v1/runs/{id}/transcript", s.getTranscript)
	m.HandleFunc("POST /api/v1/runs/{id}/{action}", s.act)
	m.HandleFunc("GET /api/v1/events", s.events)
	m.HandleFunc("GET /api/v1/agents/checks", s.agentChecks)
	m.HandleFunc("GET /api/v1/hosts", s.getHosts)
	m.HandleFunc("GET /api/v1/evals", s.evals)
	m.HandleFunc("POST /webhook/github", s.webhook)
	m.HandleFunc("GET /{$}", s.dashboard)
	m.HandleFunc("/login", s.login)
	m.Handle("GET /assets/", assetHandler())
	s.mux = m
}

// Run is a run as the API shows it.
type Run struct {
	ID         int64      `json:"id"`
	Repo       string     `json:"repo"`
	Issue      int        `json:"issue"`
	Attempt    int        `json:"attempt"`
	Title      string     `json:"title,omitempty"`
	Agent      string     `json:"agent"`
	Model      string     `json:"model,omitempty"`
	Runner     string     `json:"runner"`
	Step       string     `json:"step"`
	Status     string     `json:"status"`
	Host       string     `json:"host,omitempty"`
	Session    string     `json:"session,omitempty"`
	Branch     string     `json:"branch,omitempty"`
	PRNumber   int        `json:"pr_number,omitempty"`
	PRURL      string     `json:"pr_url,omitempty"`
	PRState    string     `json:"pr_state,omitempty"`
	Nudges     int        `json:"nudges"`
	Restarts   int        `json:"restarts"`
	Question   string     `json:"question,omitempty"`
	Summary    string     `json:"summary,omitempty"`
	Error      string     `json:"error,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Version    int64      `json:"version"`
	// Sandbox says how the agent is boxed and what its proxy refused (runbox.Line).
	Sandbox string `json:"sandbox,omitempty"`
	// AgentLine says what the agent is to its host's slots: working, idle, released… (workflow.AgentLine).
	AgentLine string `json:"agent_line,omitempty"`
	// Reach says that the agent cannot reach its model, and what would mend it (workflow.ReachLine).
	Reach string `json:"reach,omitempty"`
}

func (s *Server) view(r *store.Run) Run {
	v := Run{ID: r.ID, Repo: r.Repo, Issue: r.Issue, Attempt: r.Attempt, Title: r.State.Title, Agent: r.Agent,
		Model: r.State.Model, Runner: r.Runner, Step: r.Step, Status: string(r.Status), Host: s.o.Host,
		Session: r.Session, Branch: r.Branch, PRNumber: r.PRNumber, PRURL: r.PRURL, Nudges: r.Nudges,
		Restarts: r.Restarts, Question: r.State.Question, Summary: r.State.Summary, Error: r.Error,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt, Version: r.Version,
		Sandbox: runbox.Line(r), AgentLine: workflow.AgentLine(r), Reach: workflow.ReachHelp(r)}
	if r.PRURL != "" {
		v.PRState = "open" // the store knows a pull request was opened; its later fate is GitHub's
	}
	return v
}

// runs lists the latest attempt of every issue (all attempts with all), most recently changed first.
func (s *Server) runs(ctx context.Context, all bool) ([]Run, error) {
	rs, err := s.o.Store.ListRuns(ctx, store.Filter{})
	if err != nil {
		return nil, err
	}
	if !all {
		rs = store.LatestPerIssue(rs)
	}
	out := make([]Run, 0, len(rs))
	for _, r := range rs {
		out = append(out, s.view(r))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	return out, nil
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	all, _ := strconv.ParseBool(r.URL.Query().Get("all"))
	runs, err := s.runs(r.Context(), all)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"runs": runs})
}

// RunDetail is a run with its event log.
type RunDetail struct {
	Run
	Events []store.Event `json:"events"`
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	run, ok := s.run(w, r)
	if !ok {
		return
	}
	evs, err := s.o.Store.Events(r.Context(), run.ID)
	if err != nil {
		s.fail(w, err)
		return
	}
	if evs == nil {
		evs = []store.Event{}
	}
	s.writeJSON(w, http.StatusOK, RunDetail{Run: s.view(run), Events: evs})
}

// getScreen answers the agent's screen now; for an agent that is gone, the last screen ace saw (header
// X-Ace-Screen: last).
func (s *Server) getScreen(w http.ResponseWriter, r *http.Request) {
	run, ok := s.run(w, r)
	if !ok {
		return
	}
	history, _ := strconv.Atoi(r.URL.Query().Get("history"))
	history = min(max(history, 0), 5000)
	screen, err := s.o.Engine.Screen(r.Context(), run, history)
	switch {
	case errors.Is(err, workflow.ErrHeadless):
		s.writeError(w, http.StatusConflict, "this run is headless: it has no screen, read its transcript")
		return
	case errors.Is(err, workflow.ErrNoSession):
		if run.State.LastScreen == "" {
			s.writeError(w, http.StatusNotFound, "the agent has no session and left no screen")
			return
		}
		w.Header().Set("X-Ace-Screen", "last")
		screen = run.State.LastScreen
	case err != nil:
		s.fail(w, err)
		return
	default:
		w.Header().Set("X-Ace-Screen", "live")
	}
	s.writeText(w, http.StatusOK, screen)
}

// getTranscript answers the end of the agent's transcript as text.
func (s *Server) getTranscript(w http.ResponseWriter, r *http.Request) {
	run, ok := s.run(w, r)
	if !ok {
		return
	}
	text, err := s.transcript(run)
	if errors.Is(err, os.ErrNotExist) {
		s.writeError(w, http.StatusNotFound, "no transcript yet")
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeText(w, http.StatusOK, text)
}

func (s *Server) transcript(r *store.Run) (string, error) {
	t, ok := transcript.Of(s.o.Root, r)
	if !ok {
		return "", os.ErrNotExist
	}
	return t.Tail(maxTranscript)
}

// act is stop, send and nudge.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	if action != "stop" && action != "send" && action != "nudge" {
		s.writeError(w, http.StatusNotFound, "unknown action "+strconv.Quote(action)+" (stop, send or nudge)")
		return
	}
	var text string
	if action == "send" {
		var err error
		if text, err = sendText(r); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				s.writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the text is larger than %d bytes", mbe.Limit))
				return
			}
			s.writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	run, ok := s.run(w, r)
	if !ok {
		return
	}
	if run.Status.Terminal() {
		s.writeError(w, http.StatusConflict, fmt.Sprintf("run %d already ended (%s)", run.ID, run.Status))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.o.ActionTimeout)
	defer cancel()
	var err error
	switch action {
	case "stop":
		err = s.o.Engine.Stop(ctx, run, "stopped from the dashboard")
	case "send":
		err = s.o.Engine.Send(ctx, run, text)
	case "nudge":
		err = s.o.Engine.Nudge(ctx, run)
	}
	if errors.Is(err, workflow.ErrNoSession) {
		s.writeError(w, http.StatusConflict, err.Error())
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	s.log.InfoContext(r.Context(), "run action from the API", "action", action, "run", run.ID, "repo", run.Repo, "issue", run.Issue)
	if fresh, err := s.o.Store.GetRun(r.Context(), run.ID); err == nil {
		run = fresh
	}
	s.writeJSON(w, http.StatusOK, s.view(run))
}

// sendText reads the text to send: {"text": "..."} or a plain-text body.
func sendText(r *http.Request) (string, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return "", err
	}
	text := string(b)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var body struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			return "", fmt.Errorf("body: %v", err)
		}
		text = body.Text
	}
	if strings.TrimSpace(text) == "" {
		return "", errors.New("nothing to send: the text is empty")
	}
	return text, nil
}

// run finds the run a request names, answering 400 or 404 itself when there is none.
func (s *Server) run(w http.ResponseWriter, r *http.Request) (*store.Run, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.writeError(w, http.StatusBadRequest, "the run id must be a positive number")
		return nil, false
	}
	run, err := s.o.Store.GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		s.writeError(w, http.StatusNotFound, fmt.Sprintf("no run %d", id))
		return nil, false
	}
	if err != nil {
		s.fail(w, err)
		return nil, false
	}
	return run, true
}

// fail answers an unexpected error: logged in full, the response says only what went wrong (redacted).
func (s *Server) fail(w http.ResponseWriter, err error) {
	s.log.Warn("API request failed", "err", err)
	s.writeError(w, http.StatusInternalServerError, err.Error())
}

func (s *Server) writeError(w http.ResponseWriter, code int, msg string) {
	s.writeJSON(w, code, map[string]string{"error": msg})
}

// writeJSON answers v as JSON with every known secret value masked.
func (s *Server) writeJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // so that a secret's characters stay as they are and the redactor finds them
	if err := enc.Encode(v); err != nil {
		code, b = http.StatusInternalServerError, *bytes.NewBufferString(`{"error":"encode response"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, s.o.Redactor.Redact(b.String()))
}

func (s *Server) writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, s.o.Redactor.Redact(text))
}
