package idempotency_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/idempotency/storetest"
)

func TestMemoryContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, maxAnswer int64) (idempotency.Store, storetest.Clock) {
		return &idempotency.Memory{MaxAnswer: maxAnswer}, storetest.NewFakeClock()
	}, time.Second)
}

func TestFileContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, maxAnswer int64) (idempotency.Store, storetest.Clock) {
		return openFile(t, t.TempDir(), idempotency.FileOptions{MaxAnswer: maxAnswer}), storetest.NewFakeClock()
	}, time.Second)
}

func openFile(t testing.TB, dir string, opts idempotency.FileOptions) *idempotency.File {
	t.Helper()
	f, err := idempotency.OpenFile(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestFileNoSecretAndPrivate: nothing the store writes holds a credential
// put in the answer's headers, the caller or the query; the directory is
// 0700 and its files 0600.
func TestFileNoSecretAndPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "answers")
	f := openFile(t, dir, idempotency.FileOptions{})
	c := storetest.NewFakeClock()
	key := idempotency.Key{Scope: "openai", Caller: storetest.Secret, Value: "job-" + storetest.Secret}
	fp := idempotency.Fingerprint("POST", "/v1/x", map[string][]string{"key": {storetest.Secret}}, []byte("{}"))
	r, err := f.Begin(key.ID(), fp, time.Minute, c.Now())
	if err != nil || r.Verdict != idempotency.Run {
		t.Fatal(r, err)
	}
	r2, _ := f.Begin(storetest.ID("in-flight"), fp, time.Minute, c.Now()) // a mark left on disk
	if err := f.Keep(r.Mark, storetest.SampleAnswer("body"), time.Hour, c.Now()); err != nil {
		t.Fatal(err)
	}
	var files int
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		if d.IsDir() {
			if info.Mode().Perm() != 0o700 {
				t.Errorf("%s: mode %v, want 0700", path, info.Mode().Perm())
			}
			return nil
		}
		files++
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", path, info.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(storetest.Secret)) || strings.Contains(path, storetest.Secret) {
			t.Errorf("%s holds the secret", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".locks", r2.Mark.ID[:2])); err != nil || !bytes.Contains(b, []byte(r2.Mark.ID)) || files < 2 {
		t.Fatalf("%d files, marks %v: the test looked at nothing", files, err)
	}
}

// TestFileRefusesForeignIDs: a store name that is not a Key.ID is
// refused before it names a file.
func TestFileRefusesForeignIDs(t *testing.T) {
	f := openFile(t, t.TempDir(), idempotency.FileOptions{})
	for _, id := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("a", 63) + "/"} {
		if _, err := f.Begin(id, [32]byte{}, time.Second, time.Now()); err == nil {
			t.Errorf("Begin(%q) accepted", id)
		}
	}
}

// TestFileDamagedCountsAsAbsent: an answer damaged on disk, or a table
// of marks that fails its checksum, reads as none; the next Begin runs
// and its Keep replaces the answer, which a table found damaged then
// finds again in the log. (The test damages files without their lock, so
// it waits out the sweep a File's first Keep starts before each damage.)
func TestFileDamagedCountsAsAbsent(t *testing.T) {
	dir := t.TempDir()
	f := openFile(t, dir, idempotency.FileOptions{})
	settle := func() {
		f.Close()
		f = openFile(t, dir, idempotency.FileOptions{})
	}
	c := storetest.NewFakeClock()
	id, fp := storetest.ID("d"), storetest.FP("x")
	r, _ := f.Begin(id, fp, time.Minute, c.Now())
	if err := f.Keep(r.Mark, storetest.SampleAnswer("whole"), time.Hour, c.Now()); err != nil {
		t.Fatal(err)
	}
	settle()
	path := filepath.Join(dir, id[:2]+"-1.log")
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte("whole")) {
		t.Fatalf("the kept answer: %d bytes, %v", len(b), err)
	}
	b[bytes.LastIndex(b, []byte("whole"))+4] ^= 1 // the record's last byte (zeros run past it): it fails its checksum
	os.WriteFile(path, b, 0o600)
	r, err = f.Begin(id, fp, time.Minute, c.Now())
	if err != nil || r.Verdict != idempotency.Run {
		t.Fatalf("Begin on a damaged answer: %v %v, want run", r.Verdict, err)
	}
	locks := filepath.Join(dir, ".locks", id[:2])
	b, _ = os.ReadFile(locks)
	b[tableHead+70] ^= 1 // a byte of the mark's token: the table fails its checksum
	os.WriteFile(locks, b, 0o600)
	r, err = f.Begin(id, fp, time.Minute, c.Now())
	if err != nil || r.Verdict != idempotency.Run {
		t.Fatalf("Begin on a damaged table of marks: %v %v, want run", r.Verdict, err)
	}
	if err := f.Keep(r.Mark, storetest.SampleAnswer("again"), time.Hour, c.Now()); err != nil {
		t.Fatal(err)
	}
	if r, _ := f.Begin(id, fp, time.Minute, c.Now()); r.Verdict != idempotency.Replay || string(r.Answer.Body) != "again" {
		t.Fatalf("after the damage: %v", r.Verdict)
	}
	settle()
	b, _ = os.ReadFile(locks)
	os.WriteFile(locks, b[:16], 0o600) // cut before the log head: the log is found again
	other := openFile(t, dir, idempotency.FileOptions{})
	if r, _ := other.Begin(id, fp, time.Minute, c.Now()); r.Verdict != idempotency.Replay || string(r.Answer.Body) != "again" {
		t.Fatalf("with the table lost: %v, want the answer found in the log", r.Verdict)
	}
}

// tableHead is the length of a lock file's table with no marks: the
// first mark starts there.
const tableHead = 32

// keepN keeps one answer of size bytes for each of ids, the i-th
// expiring i minutes after the first.
func keepN(t *testing.T, s idempotency.Store, c *storetest.FakeClock, ids []string, size int) {
	t.Helper()
	for i, id := range ids {
		r, err := s.Begin(id, storetest.FP("x"), time.Minute, c.Now())
		if err != nil || r.Verdict != idempotency.Run {
			t.Fatal(r.Verdict, err)
		}
		if err := s.Keep(r.Mark, storetest.SampleAnswer(string(make([]byte, size))), time.Hour+time.Duration(i)*time.Minute, c.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

func replays(t *testing.T, s idempotency.Store, c *storetest.FakeClock, id string) bool {
	t.Helper()
	r, err := s.Begin(id, storetest.FP("x"), time.Minute, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict == idempotency.Run {
		s.Release(r.Mark)
	}
	return r.Verdict == idempotency.Replay
}

// TestFileSweepEvictsExpiringFirstNeverMarks: over MaxBytes, Sweep drops
// the answers expiring first until the rest fit; live marks stay; expired
// answers and marks and old temporary files go.
func TestFileSweepEvictsExpiringFirstNeverMarks(t *testing.T) {
	dir := t.TempDir()
	f := openFile(t, dir, idempotency.FileOptions{MaxBytes: 1 << 30})
	c := storetest.NewFakeClock()
	ids := []string{storetest.ID("0"), storetest.ID("1"), storetest.ID("2"), storetest.ID("3"), storetest.ID("4")}
	keepN(t, f, c, ids, 10_000)
	marked := storetest.ID("marked")
	if r, _ := f.Begin(marked, storetest.FP("x"), 10*time.Hour, c.Now()); r.Verdict != idempotency.Run {
		t.Fatal(r.Verdict)
	}
	st, err := f.Sweep(c.Now())
	if err != nil || st.Answers != 5 || st.Marks != 1 || st.Evicted+st.Expired != 0 {
		t.Fatalf("sweep under the bound: %+v %v", st, err)
	}
	one := st.Bytes / 5
	small := openFile(t, dir, idempotency.FileOptions{MaxBytes: 3*one + one/2})
	st, err = small.Sweep(c.Now())
	if err != nil || st.Answers != 3 || st.Evicted != 2 || st.Marks != 1 || st.Bytes > 3*one+one/2 {
		t.Fatalf("sweep over the bound: %+v %v", st, err)
	}
	if small.Bytes() != st.Bytes {
		t.Errorf("Bytes() = %d after the sweep, want its count %d", small.Bytes(), st.Bytes)
	}
	for i, id := range ids {
		if got, want := replays(t, small, c, id), i >= 2; got != want {
			t.Errorf("answer %d (expiring %d min after the first) kept %v, want %v", i, i, got, want)
		}
	}
	if r, _ := small.Begin(marked, storetest.FP("x"), time.Minute, c.Now()); r.Verdict != idempotency.InFlight {
		t.Errorf("the live mark: %v, want in flight", r.Verdict)
	}
	// An hour and three minutes on: answers 2 and 3 have expired, so has
	// a temporary file a killed writer left; answer 4 and the mark live.
	// A file of the store's earlier layout goes too.
	tmp := filepath.Join(dir, ".tmp-killed")
	os.WriteFile(tmp, []byte("half"), 0o600)
	os.Chtimes(tmp, c.Now(), c.Now())
	earlier := filepath.Join(dir, storetest.ID("earlier")+".answer")
	os.WriteFile(earlier, []byte("SLUIANS1"), 0o600)
	c.Advance(time.Hour + 3*time.Minute + time.Second)
	st, err = small.Sweep(c.Now())
	if err != nil || st.Answers != 1 || st.Expired != 2 || st.Marks != 1 {
		t.Fatalf("sweep after two expired: %+v %v", st, err)
	}
	for _, left := range []string{tmp, earlier} {
		if _, err := os.Stat(left); err == nil {
			t.Errorf("%s was not swept", filepath.Base(left))
		}
	}
	c.Advance(10 * time.Hour)
	st, err = small.Sweep(c.Now())
	if err != nil || st.Answers != 0 || st.Expired != 2 || st.Marks != 0 {
		t.Fatalf("sweep after all expired: %+v %v", st, err)
	}
	left, _ := os.ReadDir(dir)
	for _, e := range left {
		if e.Name() != ".locks" {
			t.Errorf("left after the sweep: %s", e.Name())
		}
	}
}

// TestFileKeepSweepsOverMaxBytes: a Keep that takes the kept bytes past
// MaxBytes starts a sweep (in the background), dropping the answer expiring first.
func TestFileKeepSweepsOverMaxBytes(t *testing.T) {
	dir := t.TempDir()
	f := openFile(t, dir, idempotency.FileOptions{MaxBytes: 30_000}) // three answers take over 30,000 bytes, two under 27,000
	c := storetest.NewFakeClock()
	ids := []string{storetest.ID("0"), storetest.ID("1"), storetest.ID("2")}
	keepN(t, f, c, ids, 10_000)
	f.Close() // waits for the sweeps the Keeps started
	f = openFile(t, dir, idempotency.FileOptions{MaxBytes: 30_000})
	if replays(t, f, c, ids[0]) || !replays(t, f, c, ids[1]) || !replays(t, f, c, ids[2]) {
		t.Error("want only the first answer dropped by the third Keep, the others kept")
	}
}

// TestMemoryEvictsExpiringFirstNeverMarks: past MaxBytes a Keep drops the
// answers expiring first, down to nine tenths of MaxBytes; marks stay;
// Sweep drops what expired.
func TestMemoryEvictsExpiringFirstNeverMarks(t *testing.T) {
	m := &idempotency.Memory{}
	c := storetest.NewFakeClock()
	ids := []string{storetest.ID("0"), storetest.ID("1"), storetest.ID("2"), storetest.ID("3")}
	keepN(t, m, c, ids[:1], 10_000)
	one := m.Bytes()
	m.MaxBytes = 3*one + one/2 // four answers pass it; nine tenths hold three
	marked := storetest.ID("marked")
	if r, _ := m.Begin(marked, storetest.FP("x"), 10*time.Hour, c.Now()); r.Verdict != idempotency.Run {
		t.Fatal(r.Verdict)
	}
	m.Sweep(c.Now())
	c.Advance(time.Second)
	keepN(t, m, c, ids[1:], 10_000) // expiring after answer 0: 1h, 1h1m, 1h2m from now
	if got := m.Bytes(); got != 3*one {
		t.Errorf("%d bytes kept, want three answers' %d", got, 3*one)
	}
	if replays(t, m, c, ids[0]) {
		t.Error("answer 0, expiring first, was kept")
	}
	for _, id := range ids[1:] {
		if !replays(t, m, c, id) {
			t.Errorf("answer %s dropped", id[:8])
		}
	}
	if r, _ := m.Begin(marked, storetest.FP("x"), time.Minute, c.Now()); r.Verdict != idempotency.InFlight {
		t.Errorf("the mark: %v, want in flight", r.Verdict)
	}
	c.Advance(24 * time.Hour)
	m.Sweep(c.Now())
	if m.Bytes() != 0 {
		t.Errorf("%d bytes after everything expired", m.Bytes())
	}
}

// TestFileReaderNeverSeesHalfAnAnswer: readers polling while a 4 MiB
// answer is kept see the call in flight, then the whole answer, never a
// part of it.
func TestFileReaderNeverSeesHalfAnAnswer(t *testing.T) {
	f := openFile(t, t.TempDir(), idempotency.FileOptions{})
	id, fp := storetest.ID("big"), storetest.FP("x")
	r, err := f.Begin(id, fp, time.Minute, time.Now())
	if err != nil || r.Verdict != idempotency.Run {
		t.Fatal(r.Verdict, err)
	}
	body := bytes.Repeat([]byte("data: 0123456789abcdef\n\n"), 4<<20/24)
	done := make(chan int, 4)
	var polled sync.WaitGroup
	polled.Add(4)
	for range 4 {
		go func() {
			polls := 0
			defer func() { done <- polls }()
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				polls++
				r, err := f.Begin(id, fp, time.Minute, time.Now())
				if polls == 1 {
					polled.Done()
				}
				if err != nil || r.Verdict == idempotency.Run || r.Verdict == idempotency.Conflict {
					t.Errorf("poll %d: %v %v", polls, r.Verdict, err)
					break
				}
				if r.Verdict == idempotency.Replay {
					if !bytes.Equal(r.Answer.Body, body) {
						t.Errorf("replayed %d bytes, want the whole %d", len(r.Answer.Body), len(body))
					}
					break
				}
			}
		}()
	}
	polled.Wait() // every reader saw the call in flight before the keep
	a := storetest.SampleAnswer("")
	a.Body = body
	if err := f.Keep(r.Mark, a, time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		<-done
	}
}

// TestFileLogSharedAndRewritten: two openers of one directory (as two
// processes) see each other's answers; a sweep that rewrites a shard's
// log without its expired answer leaves the other opener replaying from
// the new log and appending to it; bytes a killed writer left past the
// committed end are written over.
func TestFileLogSharedAndRewritten(t *testing.T) {
	dir := t.TempDir()
	one, two := openFile(t, dir, idempotency.FileOptions{}), openFile(t, dir, idempotency.FileOptions{})
	c := storetest.NewFakeClock()
	id := func(s string) string { return "ab" + strings.Repeat(s, 62) } // one shard
	keep := func(s idempotency.Store, id, body string, ttl time.Duration) {
		t.Helper()
		r, err := s.Begin(id, storetest.FP("x"), time.Minute, c.Now())
		if err != nil || r.Verdict != idempotency.Run {
			t.Fatal(r.Verdict, err)
		}
		if err := s.Keep(r.Mark, storetest.SampleAnswer(body), ttl, c.Now()); err != nil {
			t.Fatal(err)
		}
	}
	replayed := func(s idempotency.Store, id string) string {
		t.Helper()
		r, err := s.Begin(id, storetest.FP("x"), time.Minute, c.Now())
		if err != nil || r.Verdict != idempotency.Replay {
			t.Fatalf("%s: %v %v, want replay", id[:4], r.Verdict, err)
		}
		return string(r.Answer.Body)
	}
	keep(one, id("1"), "first", time.Hour)
	keep(one, id("2"), "second", 3*time.Hour)
	if replayed(two, id("1")) != "first" || replayed(two, id("2")) != "second" {
		t.Fatal("the other opener replays another answer")
	}
	c.Advance(2 * time.Hour)
	st, err := two.Sweep(c.Now())
	if err != nil || st.Answers != 1 || st.Expired != 1 {
		t.Fatalf("sweep: %+v %v, want 1 answer, 1 expired", st, err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "ab-*.log"))
	if len(logs) != 1 || filepath.Base(logs[0]) != "ab-2.log" {
		t.Fatalf("logs after the rewrite: %v, want ab-2.log alone", logs)
	}
	keep(two, id("3"), "third", time.Hour) // the new log now passes the old one's length
	keep(two, id("4"), "fourth", time.Hour)
	if replayed(one, id("2")) != "second" || replayed(one, id("3")) != "third" || replayed(one, id("4")) != "fourth" {
		t.Fatal("the first opener does not follow the rewritten log")
	}
	lf, _ := os.OpenFile(logs[0], os.O_WRONLY|os.O_APPEND, 0)
	lf.WriteString("SLA1 a record a killed writer left half written")
	lf.Close()
	keep(one, id("5"), "fifth", time.Hour)
	if replayed(two, id("5")) != "fifth" || replayed(openFile(t, dir, idempotency.FileOptions{}), id("2")) != "second" {
		t.Fatal("an answer kept after the rewrite is not replayed")
	}
	if r, _ := two.Begin(id("1"), storetest.FP("x"), time.Minute, c.Now()); r.Verdict != idempotency.Run {
		t.Fatalf("the expired answer: %v, want run", r.Verdict)
	}
}

// TestFileLockFileCutUnderUse: a lock file cut short while an opener has
// it mapped (by hand, or by an earlier version that shrank its tables)
// costs the shard's marks, as a damaged table does, never a crash or an
// error; the next steps work on it again.
func TestFileLockFileCutUnderUse(t *testing.T) {
	for _, size := range []int64{0, 100} {
		dir := t.TempDir()
		f := openFile(t, dir, idempotency.FileOptions{})
		c := storetest.NewFakeClock()
		a, b := "ef"+strings.Repeat("a", 62), "ef"+strings.Repeat("b", 62)
		if r, err := f.Begin(a, storetest.FP("x"), time.Minute, c.Now()); err != nil || r.Verdict != idempotency.Run {
			t.Fatal(r.Verdict, err)
		}
		if err := os.Truncate(filepath.Join(dir, ".locks", "ef"), size); err != nil {
			t.Fatal(err)
		}
		for _, want := range []idempotency.Verdict{idempotency.Run, idempotency.InFlight} {
			if r, err := f.Begin(b, storetest.FP("x"), time.Minute, c.Now()); err != nil || r.Verdict != want {
				t.Errorf("cut to %d bytes: %v %v, want %v", size, r.Verdict, err, want)
			}
		}
	}
}

// TestFileTableOverOnePage: one shard holding more marks than a page of
// its lock file takes, taken by one opener, is read whole by another that
// mapped it when it was small, and marks cleared by either are cleared
// for both.
func TestFileTableOverOnePage(t *testing.T) {
	dir := t.TempDir()
	one, two := openFile(t, dir, idempotency.FileOptions{}), openFile(t, dir, idempotency.FileOptions{})
	c := storetest.NewFakeClock()
	id := func(i int) string { return fmt.Sprintf("ab%062d", i) }
	begin := func(s idempotency.Store, i int) idempotency.Result {
		t.Helper()
		r, err := s.Begin(id(i), storetest.FP("x"), time.Minute, c.Now())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if begin(two, 999).Verdict != idempotency.Run { // two maps the lock file at one page
		t.Fatal("first mark not taken")
	}
	const n = 100 // 100 marks take over three pages
	marks := make([]idempotency.Mark, n)
	for i := range n {
		r := begin(one, i)
		if r.Verdict != idempotency.Run {
			t.Fatalf("mark %d: %v", i, r.Verdict)
		}
		marks[i] = r.Mark
	}
	for i := range n {
		if v := begin(two, i).Verdict; v != idempotency.InFlight {
			t.Fatalf("the other opener, mark %d: %v, want in_flight", i, v)
		}
	}
	for i := 0; i < n; i += 2 {
		if err := one.Keep(marks[i], storetest.SampleAnswer(fmt.Sprint("answer ", i)), time.Hour, c.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		r := begin(two, i)
		switch {
		case i%2 == 0 && (r.Verdict != idempotency.Replay || string(r.Answer.Body) != fmt.Sprint("answer ", i)):
			t.Errorf("kept mark %d: %v, want its answer replayed", i, r.Verdict)
		case i%2 == 1 && r.Verdict != idempotency.InFlight:
			t.Errorf("mark %d: %v, want in_flight", i, r.Verdict)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, ".locks", "ab")); err != nil || fi.Size()%4096 != 0 || fi.Size() < 4*4096 {
		t.Errorf("lock file: %v, want whole pages, at least 4", err)
	}
}

// TestFileReadsEarlierLockFiles: a lock file holding its table alone, as
// the earlier version of the store left it, is read: its marks hold.
func TestFileReadsEarlierLockFiles(t *testing.T) {
	dir := t.TempDir()
	f := openFile(t, dir, idempotency.FileOptions{})
	c := storetest.NewFakeClock()
	id := storetest.ID("earlier")
	if r, err := f.Begin(id, storetest.FP("x"), time.Minute, c.Now()); err != nil || r.Verdict != idempotency.Run {
		t.Fatal(r.Verdict, err)
	}
	f.Close()
	locks := filepath.Join(dir, ".locks", id[:2])
	b, err := os.ReadFile(locks)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(locks, b[:tableHead+136], 0o600); err != nil { // the table and its one mark
		t.Fatal(err)
	}
	if r, err := openFile(t, dir, idempotency.FileOptions{}).Begin(id, storetest.FP("x"), time.Minute, c.Now()); err != nil || r.Verdict != idempotency.InFlight {
		t.Fatalf("%v %v, want the earlier mark in flight", r.Verdict, err)
	}
}

// TestFileLogZerosBounded: a log runs in zeros past its last record (the
// window Keep appends through) by 16 KiB while it is small, by at most a
// quarter of its length as it grows, never more than 64 KiB.
func TestFileLogZerosBounded(t *testing.T) {
	if runtime.GOOS == "openbsd" {
		t.Skip("no window on OpenBSD: its logs are written with write calls")
	}
	dir := t.TempDir()
	f := openFile(t, dir, idempotency.FileOptions{})
	c := storetest.NewFakeClock()
	ids := make([]string, 120)
	for i := range ids {
		ids[i] = fmt.Sprintf("ab%062x", i) // one shard
	}
	for n, id := range ids {
		keepN(t, f, c, []string{id}, 4<<10)
		st, err := f.Sweep(c.Now())
		fi, err2 := os.Stat(filepath.Join(dir, "ab-1.log"))
		if err != nil || err2 != nil {
			t.Fatal(err, err2)
		}
		zeros := fi.Size() - st.Bytes
		if zeros < 0 || zeros > max(16<<10, st.Bytes/4) || zeros > 64<<10 {
			t.Fatalf("after %d answers: %d bytes of records, %d of zeros past them", n+1, st.Bytes, zeros)
		}
	}
}
