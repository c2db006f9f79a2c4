package fakeengine

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis"
)

// expiryTick is how often Redis's keys age: miniredis ages them only when
// told to (FastForward), so a node tells it the time gone by this often.
const expiryTick = 10 * time.Millisecond

// Redis is a Server: an in-memory Redis (miniredis, which runs Lua
// scripts) at the node's address, on the port of its command's --port (as
// redis.ServerCmd gives it; redis.Port without one), whose keys expire in
// real time, give or take expiryTick. It keeps nothing on disk, whatever
// persistence the command asks for. It answers the commands of the redis
// target's lock recipe and resources, not every command of Redis 7.
func Redis(ip string, spec runtime.ContainerSpec, log io.Writer) (stop func(), err error) {
	port := redis.Port
	if i := slices.Index(spec.Cmd, "--port"); i >= 0 && i+1 < len(spec.Cmd) {
		if port, err = strconv.Atoi(spec.Cmd[i+1]); err != nil {
			return nil, fmt.Errorf("redis: --port %q: %w", spec.Cmd[i+1], err)
		}
	}
	m := miniredis.NewMiniRedis()
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	fmt.Fprintf(log, "fakeengine: in-memory Redis (miniredis) serving at %s in place of %q\n", addr, spec.Cmd)
	done := make(chan struct{})
	aged := make(chan struct{})
	go func() {
		defer close(aged)
		t := time.NewTicker(expiryTick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	return func() {
		close(done)
		<-aged
		m.Close()
		fmt.Fprintf(log, "fakeengine: Redis at %s stopped\n", addr)
	}, nil
}
