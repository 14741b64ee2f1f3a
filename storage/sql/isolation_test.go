package sql

import (
	"context"
	"testing"
)

// TestMySQLWriteIsolation: write transactions on MySQL and MariaDB run
// READ COMMITTED (mysqlDialect.writeTx) although they are begun without
// naming it: every connection gets it as its session's default
// (readCommitted), on a new connection too.
func TestMySQLWriteIsolation(t *testing.T) {
	ctx := context.Background()
	s := open(t, freshMySQL(t))
	for range 2 {
		err := s.write(ctx, func(r runner) error {
			var level string
			// MySQL 8 and MariaDB 11.1 or later; MariaDB before: tx_isolation.
			if err := r.queryRow(ctx, `SELECT @@SESSION.transaction_isolation`).Scan(&level); err != nil {
				if err := r.queryRow(ctx, `SELECT @@SESSION.tx_isolation`).Scan(&level); err != nil {
					return err
				}
			}
			if level != "READ-COMMITTED" {
				t.Errorf("write transaction isolation %q, want READ-COMMITTED", level)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// The next round on a connection of its own.
		s.db.SetMaxIdleConns(0)
	}
}
