package modelserver

// Usage is what the server billed for one response, in the kinds ace counts: InputTokens are input tokens read
// afresh, CacheReadTokens input tokens served from the prompt cache, CacheWriteTokens input tokens written to it
// (Anthropic only), OutputTokens generated tokens. Each API's own fields are derived from it: Anthropic's
// input_tokens excludes the cache, OpenAI's input_tokens and Gemini's promptTokenCount include the cached part.
type Usage struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
}

// Add sums v into u.
func (u *Usage) Add(v Usage) {
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CacheReadTokens += v.CacheReadTokens
	u.CacheWriteTokens += v.CacheWriteTokens
}

// Prompt is every input token: read afresh, from the cache and into it.
func (u Usage) Prompt() int64 { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// usageFor is the usage billed for a request of size bytes after done model turns: about a token per four bytes
// of prompt, half of it from the cache and, where the API has a cache write (cacheWrite), an eighth written to
// it; 12 output tokens plus the turn, so that each response's numbers differ and each kind is non-zero.
func usageFor(size, done int, cacheWrite bool) Usage {
	prompt := int64(size/4 + 1)
	u := Usage{CacheReadTokens: prompt / 2, OutputTokens: int64(12 + done)}
	if cacheWrite {
		u.CacheWriteTokens = prompt / 8
	}
	u.InputTokens = prompt - u.CacheReadTokens - u.CacheWriteTokens
	return u
}

// Served sums the usage billed in the scenario's requests (ModelRequests): the conversation itself, which the
// CLIs record in their session files. Side requests (a session title, a router) are billed too but left out
// here; SideUsage sums them.
func (s *Server) Served() Usage {
	var u Usage
	for _, r := range s.ModelRequests() {
		u.Add(r.Usage)
	}
	return u
}

// ServedByModel is Served split by the model each request asked for.
func (s *Server) ServedByModel() map[string]Usage {
	out := map[string]Usage{}
	for _, r := range s.ModelRequests() {
		u := out[r.Model]
		u.Add(r.Usage)
		out[r.Model] = u
	}
	return out
}

// SideUsage sums the usage billed in side requests.
func (s *Server) SideUsage() Usage {
	var u Usage
	for _, r := range s.Requests() {
		if r.Side {
			u.Add(r.Usage)
		}
	}
	return u
}
