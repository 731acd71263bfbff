package modelserver

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// FailureKind is a provider error a window of requests gets instead of an answer.
type FailureKind string

const (
	// RateLimited is the API's short-term rate limit: HTTP 429 with retry-after (claude and codex wait it out
	// when it is short).
	RateLimited FailureKind = "rate_limited"
	// UsageLimit is a plan's usage limit or daily quota with a reset time: claude's unified "rejected" status,
	// codex's usage_limit_reached, gemini's per-day RESOURCE_EXHAUSTED.
	UsageLimit FailureKind = "usage_limit"
	// Overloaded is Anthropic's 529 (503 UNAVAILABLE for Gemini, 503 for OpenAI).
	Overloaded FailureKind = "overloaded"
)

// Failure answers one model request with a provider's real error shape.
type Failure struct {
	Kind       FailureKind
	RetryAfter time.Duration // the retry-after header (0: none)
	ResetAt    time.Time     // when the limit resets (zero: now + RetryAfter, or one hour)
}

// FailNext answers the next n model requests (side requests included: a real limit hits them too) with f.
func (s *Server) FailNext(n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, f)
	}
}

// FailFor answers every model request (side requests included) with f for d from the next one, as an account
// that hit its limit gets the same error until the reset. Unless f says otherwise, the limit resets at the
// window's end: the reset the error announces is when requests are answered again. It returns a channel closed
// with the window's first request, after which Window tells its end.
func (s *Server) FailFor(d time.Duration, f Failure) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window = &failWindow{d: d, f: f, started: make(chan struct{})}
	return s.window.started
}

// Window is the end of the FailFor window; zero before its first request.
func (s *Server) Window() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.window == nil {
		return time.Time{}
	}
	return s.window.end
}

// failWindow is a FailFor window: it starts with its first request.
type failWindow struct {
	d       time.Duration
	f       Failure
	end     time.Time
	started chan struct{}
}

func (s *Server) takeFailure() (Failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.window; w != nil {
		now := time.Now()
		if w.end.IsZero() {
			w.end = now.Add(w.d)
			if w.f.ResetAt.IsZero() && w.f.RetryAfter == 0 {
				w.f.ResetAt = w.end
			}
			close(w.started)
		}
		if now.Before(w.end) {
			return w.f, true
		}
	}
	if len(s.failures) == 0 {
		return Failure{}, false
	}
	f := s.failures[0]
	s.failures = s.failures[1:]
	return f, true
}

func (f Failure) reset() time.Time {
	switch {
	case !f.ResetAt.IsZero():
		return f.ResetAt
	case f.RetryAfter > 0:
		return time.Now().Add(f.RetryAfter)
	}
	return time.Now().Add(time.Hour)
}

func (f Failure) retryHeader(w http.ResponseWriter) {
	if f.RetryAfter > 0 {
		w.Header().Set("retry-after", strconv.Itoa(int(f.RetryAfter.Round(time.Second)/time.Second)))
	}
}

func (f Failure) writeAnthropic(w http.ResponseWriter) {
	h := w.Header()
	h.Set("request-id", "req_modelserver")
	f.retryHeader(w)
	reset := f.reset().UTC()
	switch f.Kind {
	case Overloaded:
		writeJSON(w, 529, anthropicError("overloaded_error", "Overloaded"))
	case UsageLimit:
		h.Set("anthropic-ratelimit-unified-status", "rejected")
		h.Set("anthropic-ratelimit-unified-reset", strconv.FormatInt(reset.Unix(), 10))
		h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
		h.Set("anthropic-ratelimit-unified-5h-status", "rejected")
		h.Set("anthropic-ratelimit-unified-5h-reset", strconv.FormatInt(reset.Unix(), 10))
		h.Set("anthropic-ratelimit-unified-5h-utilization", "1.0")
		writeJSON(w, http.StatusTooManyRequests, anthropicError("rate_limit_error",
			"This request would exceed your account's rate limit. Please try again later."))
	default:
		h.Set("anthropic-ratelimit-requests-limit", "50")
		h.Set("anthropic-ratelimit-requests-remaining", "0")
		h.Set("anthropic-ratelimit-requests-reset", reset.Format(time.RFC3339))
		writeJSON(w, http.StatusTooManyRequests, anthropicError("rate_limit_error",
			"This request would exceed the rate limit for your organization of 50 requests per minute."))
	}
}

func (f Failure) writeOpenAI(w http.ResponseWriter) {
	h := w.Header()
	h.Set("x-request-id", "req_modelserver")
	f.retryHeader(w)
	reset := f.reset()
	switch f.Kind {
	case Overloaded:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{
			"message": "The server is overloaded or not ready yet.", "type": "server_error", "param": nil,
			"code": "server_is_overloaded"}})
	case UsageLimit:
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{
			"type": "usage_limit_reached", "message": "The usage limit has been reached", "plan_type": "plus",
			"resets_at": reset.Unix(), "resets_in_seconds": int(time.Until(reset).Seconds())}})
	default:
		h.Set("x-ratelimit-limit-requests", "500")
		h.Set("x-ratelimit-remaining-requests", "0")
		h.Set("x-ratelimit-reset-requests", fmt.Sprintf("%ds", int(time.Until(reset).Seconds())))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{
			"message": "Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1.",
			"type":    "requests", "param": nil, "code": "rate_limit_exceeded"}})
	}
}

func (f Failure) writeGemini(w http.ResponseWriter) {
	f.retryHeader(w)
	switch f.Kind {
	case Overloaded:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{"code": 503,
			"message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}})
		return
	}
	quota := "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
	if f.Kind == UsageLimit {
		quota = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
	}
	details := []any{map[string]any{
		"@type": "type.googleapis.com/google.rpc.QuotaFailure",
		"violations": []any{map[string]any{
			"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
			"quotaId":     quota,
		}},
	}}
	if f.RetryAfter > 0 {
		details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": fmt.Sprintf("%ds", int(f.RetryAfter.Seconds()))})
	}
	writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{"code": 429,
		"message": "You exceeded your current quota, please check your plan and billing details.",
		"status":  "RESOURCE_EXHAUSTED", "details": details}})
}
