package config

// Price is what a model costs in US dollars per million tokens, by kind of token. ace uses it where an agent
// reports tokens but no cost (codex, gemini); a cost the agent reports itself (claude) is taken as it is.
type Price struct {
	Input      float64 `toml:"input"`
	Output     float64 `toml:"output"`
	CacheRead  float64 `toml:"cache_read"`
	CacheWrite float64 `toml:"cache_write"`
}

// defaultPrices are list prices of the built-in agents' usual models (USD per million tokens); [prices."model"]
// in ace.toml adds models or replaces these.
func defaultPrices() map[string]Price {
	return map[string]Price{
		"sonnet":            {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
		"claude-sonnet-4-5": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
		"opus":              {Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
		"haiku":             {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
		"gpt-5":             {Input: 1.25, Output: 10, CacheRead: 0.125},
		"gpt-5-codex":       {Input: 1.25, Output: 10, CacheRead: 0.125},
		"gemini-2.5-pro":    {Input: 1.25, Output: 10, CacheRead: 0.31},
		"gemini-2.5-flash":  {Input: 0.3, Output: 2.5, CacheRead: 0.075},
	}
}

// PriceOf returns the price of model: configured, else a built-in default.
func (c *Config) PriceOf(model string) (Price, bool) {
	if p, ok := c.Prices[model]; ok {
		return p, true
	}
	p, ok := defaultPrices()[model]
	return p, ok
}

// Cost is the price of the given tokens in US dollars.
func (p Price) Cost(input, output, cacheRead, cacheWrite int64) float64 {
	return (float64(input)*p.Input + float64(output)*p.Output + float64(cacheRead)*p.CacheRead +
		float64(cacheWrite)*p.CacheWrite) / 1e6
}

func validatePrices(prices map[string]Price, bad func(key, format string, args ...any)) {
	for m, p := range prices {
		if p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 {
			bad("prices."+m, "prices must not be negative")
		}
	}
}
