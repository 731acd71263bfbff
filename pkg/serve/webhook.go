package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/store"
)

// payload is the part of GitHub's webhook payloads ace reads.
type payload struct {
	Action     string `json:"action"`
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Label *struct {
		Name string `json:"name"`
	} `json:"label"`
	Issue *struct {
		Number      int       `json:"number"`
		PullRequest *struct{} `json:"pull_request"`
	} `json:"issue"`
	PullRequest *struct {
		Number int `json:"number"`
	} `json:"pull_request"`
	CheckRun   *checkRef `json:"check_run"`
	CheckSuite *checkRef `json:"check_suite"`
}

type checkRef struct {
	PullRequests []struct {
		Number int `json:"number"`
	} `json:"pull_requests"`
}

// webhook is POST /webhook/github. Nothing is done before the signature is verified; a delivery already handled
// (GitHub redelivers with the same X-GitHub-Delivery) is acknowledged and ignored. Labelled issues make dispatch
// run now; events about an issue or pull request that has a run wake that run's job. Polling stays the fallback
// for anything missed.
func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	event := r.Header.Get("X-GitHub-Event")
	count := func(outcome string) { s.metrics.webhooks.WithLabelValues(metricEvent(event), outcome).Inc() }
	if s.o.WebhookSecret == "" {
		count("disabled")
		s.writeError(w, http.StatusNotFound, "webhooks are off (serve.webhook_secret_env is not set)")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		count("too_large")
		s.writeError(w, http.StatusRequestEntityTooLarge, "payload too large or unreadable")
		return
	}
	if !validSignature(s.o.WebhookSecret, body, r.Header.Get("X-Hub-Signature-256")) {
		count("bad_signature")
		s.log.WarnContext(r.Context(), "webhook refused: bad signature", "event", event, "remote", r.RemoteAddr)
		s.writeError(w, http.StatusUnauthorized, "bad signature")
		return
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		count("bad_payload")
		s.writeError(w, http.StatusBadRequest, "payload is not JSON")
		return
	}
	delivery := r.Header.Get("X-GitHub-Delivery")
	if delivery != "" && !s.deliveries.claim(delivery) {
		count("duplicate")
		s.writeJSON(w, http.StatusOK, map[string]string{"result": "duplicate delivery ignored"})
		return
	}
	start := time.Now()
	result, err := s.handleEvent(r.Context(), event, &p)
	if err != nil {
		count("error")
		s.deliveries.forget(delivery) // GitHub's redelivery gets another try
		s.fail(w, err)
		return
	}
	count(result)
	s.log.InfoContext(r.Context(), "webhook", "event", event, "action", p.Action, "repo", p.Repository.FullName,
		"delivery", delivery, "result", result, "took", time.Since(start).Round(time.Microsecond))
	s.writeJSON(w, http.StatusAccepted, map[string]string{"result": result})
}

// handleEvent enqueues what the event calls for and says what it did: "dispatched", "woken", "ignored".
func (s *Server) handleEvent(ctx context.Context, event string, p *payload) (string, error) {
	repo := p.Repository.FullName
	if event == "ping" {
		return "pong", nil
	}
	if repo == "" {
		return "ignored", nil
	}
	switch event {
	case "issues":
		if p.Issue == nil {
			return "ignored", nil
		}
		switch p.Action {
		case "labeled":
			if p.Label != nil && s.o.TriggerLabel != "" && p.Label.Name != s.o.TriggerLabel {
				return s.wakeIssue(ctx, repo, p.Issue.Number) // an agent or status label: the run, if any, looks
			}
			if err := s.o.Queue.Dispatch(ctx); err != nil {
				return "", err
			}
			return "dispatched", nil
		case "unlabeled", "closed", "reopened", "edited":
			return s.wakeIssue(ctx, repo, p.Issue.Number)
		}
	case "issue_comment":
		if p.Issue == nil || p.Action != "created" {
			return "ignored", nil
		}
		if p.Issue.PullRequest != nil {
			return s.wakePRs(ctx, repo, p.Issue.Number)
		}
		return s.wakeIssue(ctx, repo, p.Issue.Number)
	case "pull_request", "pull_request_review":
		if p.PullRequest == nil {
			return "ignored", nil
		}
		return s.wakePRs(ctx, repo, p.PullRequest.Number)
	case "check_run", "check_suite":
		ref := p.CheckRun
		if event == "check_suite" {
			ref = p.CheckSuite
		}
		if ref == nil || p.Action != "completed" {
			return "ignored", nil
		}
		var nums []int
		for _, pr := range ref.PullRequests {
			nums = append(nums, pr.Number)
		}
		return s.wakePRs(ctx, repo, nums...)
	}
	return "ignored", nil
}

// wakeIssue wakes the job of the issue's unfinished run, if it has one.
func (s *Server) wakeIssue(ctx context.Context, repo string, issue int) (string, error) {
	runs, err := s.o.Store.ListRuns(ctx, store.Filter{Repo: repo, Issue: issue})
	if err != nil {
		return "", err
	}
	runs = store.LatestPerIssue(runs)
	if len(runs) == 0 || runs[0].Status.Terminal() {
		return "ignored", nil
	}
	if err := s.o.Queue.Wake(ctx, repo, issue); err != nil {
		return "", err
	}
	return "woken", nil
}

// wakePRs wakes the runs whose pull request is one of numbers.
func (s *Server) wakePRs(ctx context.Context, repo string, numbers ...int) (string, error) {
	if len(numbers) == 0 {
		return "ignored", nil
	}
	runs, err := s.o.Store.ListRuns(ctx, store.Filter{Repo: repo})
	if err != nil {
		return "", err
	}
	result := "ignored"
	var errs []error
	for _, r := range store.LatestPerIssue(runs) {
		for _, n := range numbers {
			if r.PRNumber == n && r.PRNumber != 0 && !r.Status.Terminal() {
				if err := s.o.Queue.Wake(ctx, repo, r.Issue); err != nil {
					errs = append(errs, err)
				} else {
					result = "woken"
				}
			}
		}
	}
	return result, errors.Join(errs...)
}

// validSignature checks GitHub's "sha256=<hex>" HMAC of the body, in constant time.
func validSignature(secret string, body []byte, header string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil))
}

// metricEvent keeps the metric's label set bounded: unknown event names are "other".
func metricEvent(e string) string {
	switch e {
	case "ping", "issues", "issue_comment", "pull_request", "pull_request_review", "check_run", "check_suite":
		return e
	}
	return "other"
}

// recent remembers the last n delivery IDs.
type recent struct {
	mu    sync.Mutex
	keys  map[string]bool
	order []string
	n     int
}

func newRecent(n int) *recent { return &recent{keys: map[string]bool{}, n: n} }

// claim remembers k and reports whether it was new: of two deliveries with one ID arriving at once, one wins.
func (r *recent) claim(k string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys[k] {
		return false
	}
	r.keys[k] = true
	r.order = append(r.order, k)
	if len(r.order) > r.n {
		delete(r.keys, r.order[0])
		r.order = r.order[1:]
	}
	return true
}

// forget drops k (its handling failed).
func (r *recent) forget(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.keys, k) // its place in order is dropped in turn; a stale entry there deletes nothing
}
