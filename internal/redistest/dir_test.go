package redistest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A dump.rdb left in the directory a test (or a script) runs in must not
// become the state of the servers it starts: redis-server loads the
// dump.rdb of its working directory at start, even with --save "".
func TestStartIgnoresDumpInWorkingDir(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	ctx := context.Background()

	// Make a dump.rdb holding a budget's spend, as a stale copy would.
	src := Start(t)
	if err := src.Client().HSet(ctx, "sluice:ledger:{budget:daily:all:stale}", "spent", 600000000).Err(); err != nil {
		t.Fatal(err)
	}
	if err := src.Client().Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	dir, err := src.Client().ConfigGet(ctx, "dir").Result()
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(dir["dir"], "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	src.Kill()
	if err := os.WriteFile(filepath.Join(cwd, "dump.rdb"), body, 0o600); err != nil {
		t.Fatal(err)
	}

	s := Start(t)
	n, err := s.Client().DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		keys, _ := s.Client().Keys(ctx, "*").Result()
		t.Fatalf("a new server holds %d keys %q: it loaded the dump.rdb of the working directory", n, keys)
	}
}

// A replica writes its copy of the master as dump.rdb in its directory;
// that must not be the working directory, where the next server started
// there (by a test or a script) would load it.
func TestReplicaLeavesNoDumpInWorkingDir(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	ctx := context.Background()

	m := Start(t)
	if err := m.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r := StartWith(t, "--replicaof", "127.0.0.1", strconv.Itoa(m.Port()))
	wait(t, 20*time.Second, "the replica to hold the master's key", func() bool {
		v, err := r.Client().Get(ctx, "k").Result()
		return err == nil && v == "v"
	})
	if _, err := os.Stat(filepath.Join(cwd, "dump.rdb")); err == nil {
		t.Fatal("the replica wrote dump.rdb in the working directory")
	}
	if _, err := os.Stat(filepath.Join(r.Dir(), "dump.rdb")); err != nil {
		t.Errorf("the replica's copy is not in its own directory: %v", err)
	}
}
