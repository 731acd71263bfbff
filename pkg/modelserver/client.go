package modelserver

import "fmt"

// APIKey is the API key a CLI pointed at the server is given; the server accepts any.
const APIKey = "sk-modelserver-test-key"

// OAuthToken is the subscriber token claude is given instead of an API key where a case needs a subscriber's
// sign-in (the unified usage limit is a subscriber's).
const OAuthToken = "sk-ant-oat01-modelserver-test"

// Client is how one CLI is pointed at the server from a fresh HOME: the variables it needs and the files under
// that HOME (relative paths), nothing else a user would not have.
type Client struct {
	Env   []string
	Files map[string]string
	// Gateway are the variables a user of the CLI sets behind a model gateway (a Scenario with Gateway), as its
	// vendor's gateway guide says: claude's CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, which stops what the gateway
	// would not pass.
	Gateway []string
}

// ClientFor is what a fresh HOME needs for cli to talk to the server at baseURL (http://127.0.0.1:PORT):
//   - all: ~/.gitconfig with a name and e-mail (a user who commits has them);
//   - claude: ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY (CLAUDE_CODE_OAUTH_TOKEN instead when subscriber),
//     ~/.claude.json {"hasCompletedOnboarding": true} (without it claude's first start runs an online onboarding
//     check and exits);
//   - codex: OPENAI_API_KEY and ~/.codex/config.toml with openai_base_url = "<baseURL>/v1";
//   - gemini: GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL and ~/.gemini/settings.json selecting the "gemini-api-key"
//     auth (what choosing "Gemini API Key" in its auth dialog writes). Without it gemini takes the base URL for
//     its "gateway" auth, which 0.61 refuses headless: exit 41 "Invalid auth method selected.".
//
// Dialogs a new user meets (trust, API-key confirmation) are left to whoever drives the CLI.
func ClientFor(cli, baseURL string, subscriber bool) (Client, error) {
	c := Client{Files: map[string]string{
		".gitconfig": "[user]\n\tname = Ace Test\n\temail = ace@example.invalid\n[init]\n\tdefaultBranch = main\n",
	}}
	switch cli {
	case "claude":
		c.Env = []string{"ANTHROPIC_BASE_URL=" + baseURL, "ANTHROPIC_API_KEY=" + APIKey}
		if subscriber {
			c.Env[1] = "CLAUDE_CODE_OAUTH_TOKEN=" + OAuthToken
		}
		c.Files[".claude.json"] = `{"hasCompletedOnboarding": true}` + "\n"
		c.Gateway = []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	case "codex":
		c.Env = []string{"OPENAI_API_KEY=" + APIKey}
		c.Files[".codex/config.toml"] = fmt.Sprintf("openai_base_url = %q\n", baseURL+"/v1")
	case "gemini":
		c.Env = []string{"GEMINI_API_KEY=" + APIKey, "GOOGLE_GEMINI_BASE_URL=" + baseURL}
		c.Files[GeminiSettings] = `{"security": {"auth": {"selectedType": "gemini-api-key"}}}` + "\n"
	default:
		return Client{}, fmt.Errorf("modelserver: no client setup for %q (claude, codex or gemini)", cli)
	}
	return c, nil
}

// GeminiSettings is gemini's settings file, relative to the HOME.
const GeminiSettings = ".gemini/settings.json"

// ProviderVariables are the variables through which a CLI finds a model service and its credentials: a process
// pointed at this server must not inherit the user's.
var ProviderVariables = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR",
	"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
	"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME",
	"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_GENAI_USE_VERTEXAI",
	"GOOGLE_CLOUD_PROJECT", "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
}
