package main

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/targets"
	"github.com/fencecheck/fencecheck/targets/consul"
	"github.com/fencecheck/fencecheck/targets/etcd"
	"github.com/fencecheck/fencecheck/targets/redis"
	"github.com/fencecheck/fencecheck/targets/redis/redlock"
	"github.com/fencecheck/fencecheck/targets/redis/sentinel"
)

// targetTable lists every target --target can name. Adding a target is one
// folder under targets/ and one line here.
var targetTable = []targets.Target{
	etcd.Target{},
	consul.Target{},
	redis.Target{},
	redis.Target{NoPersistence: true},
	sentinel.Target{},
	redlock.Target{},
}

func targetNames() string {
	names := make([]string, len(targetTable))
	for i, t := range targetTable {
		names[i] = t.Name()
	}
	return strings.Join(names, ", ")
}

// lookupTarget returns the target named name, or an error listing the valid
// names.
func lookupTarget(name string) (targets.Target, error) {
	for _, t := range targetTable {
		if t.Name() == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("%w: unknown target %q (valid: %s)", targets.ErrBadConfig, name, targetNames())
}
