package idempotency_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/idempotency/storetest"
)

// benchAnswer is a small chat completion's answer: 1 KiB of body.
func benchAnswer() *idempotency.Answer {
	a := storetest.SampleAnswer(string(make([]byte, 1024)))
	a.Stream = false
	return a
}

func benchIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = storetest.ID(fmt.Sprint("bench-", i))
	}
	return ids
}

// BenchmarkFileBeginKeep is a call with a key not yet kept: Begin takes
// the mark, Keep keeps a 1 KiB answer, in a directory whose every shard
// has its files (warmFile).
func BenchmarkFileBeginKeep(b *testing.B) {
	f := openFile(b, b.TempDir(), idempotency.FileOptions{})
	warmFile(b, f)
	benchBeginKeep(b, f)
}

// warmFile keeps an answer in each of f's 256 shards, as a store that has
// run a while has: every shard's lock file and log exist, so a benchmark
// does not time the 512 files' creation, once per directory (and costly
// on a file system that has just deleted many).
func warmFile(b *testing.B, f *idempotency.File) {
	now := time.Now()
	for i := range 256 {
		r, err := f.Begin(fmt.Sprintf("%02x%062x", i, 1), storetest.FP("warm"), time.Minute, now)
		if err == nil {
			err = f.Keep(r.Mark, benchAnswer(), time.Hour, now)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileBeginKeepCold is BenchmarkFileBeginKeep with the caches
// cold, as they are in a gateway, where a whole call runs between one
// Begin and the next: 8 MiB are written between ops, untimed. It reports
// the time of Begin and Keep alone (store-ns/op); ns/op counts the
// writes too.
func BenchmarkFileBeginKeepCold(b *testing.B) {
	f := openFile(b, b.TempDir(), idempotency.FileOptions{})
	warmFile(b, f)
	ids, fp, a, now := benchIDs(b.N), storetest.FP("x"), benchAnswer(), time.Now()
	scratch := make([]byte, 8<<20)
	var store time.Duration
	b.ResetTimer()
	for i := range b.N {
		for j := 0; j < len(scratch); j += 64 {
			scratch[j]++
		}
		t0 := time.Now()
		r, err := f.Begin(ids[i], fp, time.Minute, now)
		if err != nil || r.Verdict != idempotency.Run {
			b.Fatal(r.Verdict, err)
		}
		if err := f.Keep(r.Mark, a, time.Hour, now); err != nil {
			b.Fatal(err)
		}
		store += time.Since(t0)
	}
	b.ReportMetric(float64(store)/float64(b.N), "store-ns/op")
}

// BenchmarkMemoryBeginKeep is BenchmarkFileBeginKeep on a Memory.
func BenchmarkMemoryBeginKeep(b *testing.B) { benchBeginKeep(b, &idempotency.Memory{}) }

// BenchmarkMemoryBeginKeepFull is BenchmarkMemoryBeginKeep on a Memory
// kept full (MaxBytes 4 MiB, about 3,500 answers): evictions included.
func BenchmarkMemoryBeginKeepFull(b *testing.B) {
	benchBeginKeep(b, &idempotency.Memory{MaxBytes: 4 << 20})
}

func benchBeginKeep(b *testing.B, s idempotency.Store) {
	ids, fp, a, now := benchIDs(b.N), storetest.FP("x"), benchAnswer(), time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r, err := s.Begin(ids[i], fp, time.Minute, now)
		if err != nil || r.Verdict != idempotency.Run {
			b.Fatal(r.Verdict, err)
		}
		if err := s.Keep(r.Mark, a, time.Hour, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileBeginRelease is what a key adds before and after a call
// that keeps nothing: Begin takes the mark, Release clears it (warmFile).
func BenchmarkFileBeginRelease(b *testing.B) {
	f := openFile(b, b.TempDir(), idempotency.FileOptions{})
	warmFile(b, f)
	ids, fp, now := benchIDs(b.N), storetest.FP("x"), time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r, err := f.Begin(ids[i], fp, time.Minute, now)
		if err != nil || r.Verdict != idempotency.Run {
			b.Fatal(r.Verdict, err)
		}
		if err := f.Release(r.Mark); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileReplay is a duplicate of a kept answer: Begin replays it.
func BenchmarkFileReplay(b *testing.B) {
	f := openFile(b, b.TempDir(), idempotency.FileOptions{})
	benchReplay(b, f)
}

// BenchmarkMemoryReplay is BenchmarkFileReplay on a Memory.
func BenchmarkMemoryReplay(b *testing.B) { benchReplay(b, &idempotency.Memory{}) }

func benchReplay(b *testing.B, s idempotency.Store) {
	id, fp, now := storetest.ID("replayed"), storetest.FP("x"), time.Now()
	r, _ := s.Begin(id, fp, time.Minute, now)
	if err := s.Keep(r.Mark, benchAnswer(), time.Hour, now); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := s.Begin(id, fp, time.Minute, now)
		if err != nil || r.Verdict != idempotency.Replay {
			b.Fatal(r.Verdict, err)
		}
	}
}

// BenchmarkFileSweep100k keeps 100,000 answers of 1 KiB and measures a
// sweep that finds them all live (the periodic sweep's cost), reporting
// the space they take on disk; the "cold" leg the first sweep of a File
// newly opened on them (another process's, which reads every record's
// head once); the "expire-all" leg times sweeps that remove all of them
// (the store filled again, untimed, before each).
func BenchmarkFileSweep100k(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	f := openFile(b, dir, idempotency.FileOptions{MaxBytes: 1 << 40})
	ids, fp, a, now := benchIDs(n), storetest.FP("x"), benchAnswer(), time.Now()
	fill := func(b *testing.B) {
		for _, id := range ids {
			r, err := f.Begin(id, fp, time.Minute, now)
			if err != nil || r.Verdict != idempotency.Run {
				b.Fatal(r.Verdict, err)
			}
			if err := f.Keep(r.Mark, a, time.Hour, now); err != nil {
				b.Fatal(err)
			}
		}
	}
	fill(b)
	b.Run("live", func(b *testing.B) {
		for range b.N {
			st, err := f.Sweep(now)
			if err != nil || st.Answers != n {
				b.Fatal(st, err)
			}
			b.ReportMetric(float64(st.Bytes)/(1<<20), "MiB-counted")
		}
		b.ReportMetric(diskMiB(b, dir), "MiB-on-disk")
	})
	b.Run("cold", func(b *testing.B) { // a process's first sweep reads every record's head
		for range b.N {
			fresh := openFile(b, dir, idempotency.FileOptions{MaxBytes: 1 << 40})
			st, err := fresh.Sweep(now)
			if err != nil || st.Answers != n {
				b.Fatal(st, err)
			}
			fresh.Close()
		}
	})
	b.Run("expire-all", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			if st, _ := f.Sweep(now); st.Answers != n {
				fill(b)
			}
			b.StartTimer()
			st, err := f.Sweep(now.Add(2 * time.Hour))
			if err != nil || st.Expired != n {
				b.Fatal(st, err)
			}
		}
	})
}

// diskMiB is the space the files under dir take on disk, directories
// included.
func diskMiB(b *testing.B, dir string) float64 {
	var blocks int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil {
			blocks += info.Sys().(*syscall.Stat_t).Blocks
		}
		return nil
	})
	return float64(blocks*512) / (1 << 20)
}
