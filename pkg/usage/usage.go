// Package usage is what an agent spent: tokens by the kind a provider bills, and their cost. It is the one
// count that the agents' headless stream parsers, their session-file readers and the store all keep.
package usage

// Usage counts tokens by the kind a provider bills and what they cost. InputTokens are read afresh (not from
// the prompt cache), CacheReadTokens read from the cache, CacheWriteTokens written to it, OutputTokens generated
// (reasoning and thoughts included): input + cache read is what the model read, each priced apart. Each CLI's
// parser maps its own fields onto these: OpenAI's and Gemini's input counts include the cached part, which is
// taken out of InputTokens here. CostUSD is a cost the agent reported itself, or one ace priced; 0 when
// neither.
type Usage struct {
	InputTokens      int64   `json:"input_tokens,omitzero"`
	OutputTokens     int64   `json:"output_tokens,omitzero"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitzero"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitzero"`
	CostUSD          float64 `json:"cost_usd,omitzero"`
}

// Add adds v to u, kind by kind, and its cost.
func (u *Usage) Add(v Usage) {
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CacheReadTokens += v.CacheReadTokens
	u.CacheWriteTokens += v.CacheWriteTokens
	u.CostUSD += v.CostUSD
}

// Sub is u minus v, kind by kind, and its cost.
func (u Usage) Sub(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens - v.InputTokens, OutputTokens: u.OutputTokens - v.OutputTokens,
		CacheReadTokens: u.CacheReadTokens - v.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens - v.CacheWriteTokens,
		CostUSD: u.CostUSD - v.CostUSD}
}

// Tokens is every token counted.
func (u *Usage) Tokens() int64 {
	if u == nil {
		return 0
	}
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}
