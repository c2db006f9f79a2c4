// Package pgserver is how fencecheck runs PostgreSQL 15 (Debian's package,
// in the base image): its port, data directory and command line, the DSN
// of a server, and when a server is ready. Two systems run it: the
// "postgres" resource (the database a lock protects) and the "pg-advisory"
// target (advisory locks). Neither imports the other; both import this.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencecheck/fencecheck/targets"
)

// Port is PostgreSQL's port.
const Port = 5432

// DataDir is the server's data directory in the base image.
const DataDir = "/var/lib/postgresql/15/main"

// Cmd is the server's command line: the postgres binary as the container's
// PID 1 (so SIGSTOP and SIGKILL reach it), running as the postgres user,
// listening on every address, without TLS, trusting the clients that
// /etc/fencecheck/pg_hba.conf lets in, with fsync and synchronous commit on
// (PostgreSQL's defaults: a SIGKILL loses no committed write).
func Cmd() []string {
	return []string{"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
		"/usr/lib/postgresql/15/bin/postgres",
		"-D", DataDir,
		"-c", "config_file=/etc/postgresql/15/main/postgresql.conf",
		"-c", "hba_file=/etc/fencecheck/pg_hba.conf",
		"-c", "listen_addresses=*",
		"-c", "unix_socket_directories=",
		"-c", "ssl=off",
		"-c", "fsync=on",
		"-c", "synchronous_commit=on",
		"-c", "log_min_messages=warning",
	}
}

// ConnString is the DSN of the server at addr, as the postgres user, with
// a connect timeout of timeout (at least a second).
func ConnString(addr string, timeout time.Duration) string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=%d", addr, max(1, int(timeout/time.Second)))
}

// Ready returns nil once the first of nodes accepts a connection and is
// out of recovery (after a restart, it replays its WAL first), polling
// until ctx ends.
func Ready(ctx context.Context, nodes []targets.Node) error {
	if len(nodes) == 0 {
		return errors.New("postgres: no node")
	}
	return targets.PollReady(ctx, "postgres", 100*time.Millisecond, func(ctx context.Context) error { return ready(ctx, nodes[0].Addr) })
}

func ready(ctx context.Context, addr string) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, ConnString(addr, 2*time.Second))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var recovering bool
	if err := conn.QueryRow(cctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil {
		return err
	}
	if recovering {
		return errors.New("in recovery")
	}
	return nil
}
