package serve

// Helpers of the package's own tests, for the end-to-end test (package serve_test, which runs ace itself).
var (
	Browser    = browser
	Screenshot = screenshot
	Sign       = sign
)
