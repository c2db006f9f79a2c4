// Command fencecheck is a Jepsen-style chaos and linearizability test
// harness for distributed locks and leases. See the README.
//
// Exit codes (as Jepsen's): 0 valid, 1 invalid, 2 unknown, 254 bad arguments
// or input, 255 the harness itself failed.
package main

import "github.com/fencecheck/fencecheck"

func main() { fencecheck.Main() }
