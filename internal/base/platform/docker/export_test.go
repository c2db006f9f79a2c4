package docker

import "github.com/docker/docker/client"

// SDK is e's Engine client, for tests that call the Engine beside the
// Engine type's methods.
func SDK(e *Engine) *client.Client { return e.cli }
