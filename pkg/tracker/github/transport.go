package github

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/atomicfile"
)

// etagCache makes GETs conditional: a stored ETag goes out as If-None-Match and a 304 is answered from the
// stored body. GitHub does not count 304s against the rate limit, so an idle poll costs nothing.
type etagCache struct {
	next http.RoundTripper
	max  int
	// dir, when set, keeps entries on disk too, so that `ace poll --once` from cron, a new process every time,
	// still sends If-None-Match.
	dir string

	mu      sync.Mutex
	entries map[string]*cached
	order   []string
}

type cached struct {
	ETag   string      `json:"etag"`
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

func (c *etagCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return c.next.RoundTrip(req)
	}
	key := cacheKey(req)
	c.mu.Lock()
	e := c.entries[key]
	c.mu.Unlock()
	if e == nil {
		e = c.load(key)
	}
	if e != nil {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", e.ETag)
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotModified && e != nil {
		resp.Body.Close()
		h := e.Header.Clone()
		for _, k := range []string{"X-Ratelimit-Remaining", "X-Ratelimit-Reset", "X-Ratelimit-Limit"} {
			if v := resp.Header.Get(k); v != "" {
				h.Set(k, v)
			}
		}
		return &http.Response{Status: "200 OK", StatusCode: e.Status, Header: h, Body: io.NopCloser(bytes.NewReader(e.Body)),
			ContentLength: int64(len(e.Body)), Request: req, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor}, nil
	}
	if etag := resp.Header.Get("ETag"); etag != "" && resp.StatusCode == http.StatusOK {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		c.store(key, &cached{ETag: etag, Status: resp.StatusCode, Header: resp.Header.Clone(), Body: body})
	}
	return resp, nil
}

func (c *etagCache) store(key string, e *cached) {
	c.save(key, e)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		c.order = append(c.order, key)
	}
	c.entries[key] = e
	for len(c.order) > c.max {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *etagCache) file(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".json")
}

// load reads a persisted entry; a missing or damaged one is a miss.
func (c *etagCache) load(key string) *cached {
	if c.dir == "" {
		return nil
	}
	b, err := os.ReadFile(c.file(key))
	if err != nil {
		return nil
	}
	var e cached
	if json.Unmarshal(b, &e) != nil || e.ETag == "" {
		return nil
	}
	return &e
}

// save persists an entry atomically (temp file + rename); failures only cost a full response later.
func (c *etagCache) save(key string, e *cached) {
	if c.dir == "" || os.MkdirAll(c.dir, 0o700) != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	_ = atomicfile.Write(c.file(key), b, 0o600)
}

// cacheKey separates users: the same URL read with another token may show other things.
func cacheKey(req *http.Request) string {
	sum := sha256.Sum256([]byte(req.Header.Get("Authorization")))
	return req.URL.String() + "|" + string(sum[:8])
}

// retrier retries what may pass: rate limits (primary: wait for the reset, bounded; secondary: Retry-After, else
// a minute), 5xx and network errors with jittered exponential backoff. 4xx other than rate limits are final.
type retrier struct {
	next       http.RoundTripper
	maxRetries int
	maxWait    time.Duration
	sleep      func(context.Context, time.Duration) error
	log        *slog.Logger
	now        func() time.Time
}

// errRateLimited is returned when the primary rate limit resets later than maxWait.
var errRateLimited = errors.New("GitHub API rate limit exhausted")

func (t *retrier) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 && req.Body != nil && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r = req.Clone(req.Context())
			r.Body = body
		}
		resp, err := t.next.RoundTrip(r)
		wait, retry, final := t.decide(resp, err, attempt)
		if final != nil {
			if resp != nil {
				resp.Body.Close()
			}
			return nil, final
		}
		if !retry || attempt >= t.maxRetries {
			return resp, err
		}
		if resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		t.log.Warn("GitHub request will be retried", "method", req.Method, "path", req.URL.Path, "attempt", attempt+1,
			"wait", wait, "status", statusOf(resp), "err", err)
		if err := t.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

func (t *retrier) decide(resp *http.Response, err error, attempt int) (wait time.Duration, retry bool, final error) {
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return 0, false, nil
		}
		return backoff(attempt), true, nil
	}
	switch {
	case resp.StatusCode >= 500:
		return backoff(attempt), true, nil
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests:
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			if s, err := strconv.Atoi(ra); err == nil {
				return time.Duration(s)*time.Second + backoff(attempt)/4, true, nil
			}
		}
		if resp.Header.Get("X-Ratelimit-Remaining") == "0" {
			reset, _ := strconv.ParseInt(resp.Header.Get("X-Ratelimit-Reset"), 10, 64)
			wait := time.Unix(reset, 0).Sub(t.now()) + time.Second
			if wait > t.maxWait {
				return 0, false, errRateLimited
			}
			return max(wait, time.Second), true, nil
		}
		if resp.StatusCode == http.StatusTooManyRequests || isSecondary(resp) {
			return time.Minute << min(attempt, 4), true, nil
		}
	}
	return 0, false, nil
}

// isSecondary peeks at a 403's body for GitHub's secondary-rate-limit message, keeping the body readable.
func isSecondary(resp *http.Response) bool {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return strings.Contains(strings.ToLower(string(body)), "secondary rate limit")
}

// backoff is 500ms·2^attempt with ±25% jitter, capped at 30 s.
func backoff(attempt int) time.Duration {
	d := 500 * time.Millisecond << min(attempt, 6)
	if d > 30*time.Second {
		d = 30 * time.Second
	}
	return time.Duration(float64(d) * (0.75 + rand.Float64()/2))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
